package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/match"
	"github.com/offload/offload/sshd/transport"
)

// AlgList names one of the algorithm lists an sshd_config sets.
type AlgList int

const (
	CipherList AlgList = iota
	KexList
	MACList
	HostKeyAlgList
	PubkeyList    // PubkeyAcceptedAlgorithms: user keys and certificates
	CASigList     // CASignatureAlgorithms: signatures of certificate authorities
	HostbasedList // HostbasedAcceptedAlgorithms (inert: no host-based authentication)
)

// algTable is one list's names: what offload implements (in preference
// order), its default, and every name OpenSSH 10 (or Debian's) knows, so
// that a name offload lacks is told from a typing mistake.
type algTable struct {
	list      AlgList
	keyword   string
	supported []string
	def       []string
	openssh   []string
}

// The tables come from the transport's and auth's own, so that the
// configuration accepts exactly what the server implements.
var algTables = withLists(map[AlgList]*algTable{
	CipherList:     transportTable("Ciphers", transport.KindCipher, opensshCiphers),
	KexList:        transportTable("KexAlgorithms", transport.KindKex, opensshKex),
	MACList:        transportTable("MACs", transport.KindMAC, opensshMACs),
	HostKeyAlgList: transportTable("HostKeyAlgorithms", transport.KindHostKey, opensshKeyTypes),
	PubkeyList: {keyword: "PubkeyAcceptedAlgorithms", def: auth.DefaultPublicKeyAlgorithms,
		supported: append(slices.Clone(auth.DefaultPublicKeyAlgorithms), "ssh-rsa", "ssh-rsa-cert-v01@openssh.com"),
		openssh:   opensshKeyTypes},
	CASigList: {keyword: "CASignatureAlgorithms", def: auth.DefaultCASignatureAlgorithms,
		supported: append(slices.Clone(auth.DefaultCASignatureAlgorithms), "ssh-rsa"), openssh: opensshKeyTypes},
	HostbasedList: {keyword: "HostbasedAcceptedAlgorithms", supported: opensshKeyTypes, def: opensshDefaultKeyTypes,
		openssh: opensshKeyTypes},
})

func withLists(m map[AlgList]*algTable) map[AlgList]*algTable {
	for l, t := range m {
		t.list = l
	}
	return m
}

func transportTable(keyword string, kind transport.AlgorithmKind, openssh []string) *algTable {
	t := &algTable{keyword: keyword, openssh: openssh}
	for _, a := range transport.Algorithms() {
		if a.Kind != kind {
			continue
		}
		t.supported = append(t.supported, a.Name)
		if a.Default {
			t.def = append(t.def, a.Name)
		}
	}
	return t
}

// SupportedAlgorithms returns every algorithm name of list that offload implements,
// in the default preference order.
func SupportedAlgorithms(list AlgList) []string { return slices.Clone(algTables[list].supported) }

// DefaultAlgorithms returns the list used when the configuration does not
// set one: the supported names less those off by default (the NIST-curve
// key exchanges, which scanners flag).
func DefaultAlgorithms(list AlgList) []string { return slices.Clone(algTables[list].def) }

// maxAlgNames bounds the names (or patterns) in one algorithm list.
const maxAlgNames = 128

// profileDefaults is the default of list under the CryptoProfile profile:
// the transport's profile lists for the four lists it negotiates.
func profileDefaults(profile string, list AlgList) []string {
	kinds := map[AlgList]transport.AlgorithmKind{KexList: transport.KindKex, MACList: transport.KindMAC,
		HostKeyAlgList: transport.KindHostKey}
	if k, ok := kinds[list]; ok && profile == string(transport.ProfileHardened) {
		return transport.ProfileHardened.Defaults(k)
	}
	return DefaultAlgorithms(list)
}

// ParseAlgList resolves an sshd algorithm list argument against the
// defaults, as sshd does: "a,b" replaces the list; "+a,b" appends to the
// defaults; "-pat,pat" removes the defaults matching the wildcard
// patterns; "^a,b" puts a and b first. Names may be wildcard patterns
// ('*', '?'). A name nobody knows is an error (sshd's "Bad SSH2 cipher
// spec"), and so is a name OpenSSH knows that offload does not implement
// (DSA, say), with the reason, and a list that leaves nothing offload
// implements. The only names left out with a warning are those OpenSSH
// too would never offer here (inertAlg: GSSAPI key exchanges, security-key
// host key algorithms); in a '-' list, a name that removes nothing is a
// warning.
func ParseAlgList(list AlgList, arg string) (names, warnings []string, err error) {
	return resolveAlgList(list, arg)
}

func resolveAlgList(list AlgList, arg string) ([]string, []string, error) {
	t := algTables[list]
	if arg == "" {
		return nil, nil, fmt.Errorf("empty %s list", t.keyword)
	}
	op, body := arg[0], arg[1:]
	if op != '+' && op != '-' && op != '^' {
		op, body = 0, arg
	}
	entries, err := splitAlgs(t, body)
	if err != nil {
		return nil, nil, err
	}
	if op == '-' {
		return t.remove(entries)
	}
	names, warns, err := t.expand(entries)
	if err != nil {
		return nil, nil, err
	}
	switch op {
	case '+':
		names = appendNew(slices.Clone(t.def), names...)
	case '^':
		names = appendNew(names, t.def...)
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("%q leaves no %s that offload implements (%s)", arg, t.keyword, strings.Join(warns, "; "))
	}
	return names, warns, nil
}

func splitAlgs(t *algTable, s string) ([]string, error) {
	if strings.Count(s, ",") >= maxAlgNames {
		return nil, fmt.Errorf("more than %d names in a %s list", maxAlgNames, t.keyword)
	}
	entries := strings.Split(s, ",")
	for _, e := range entries {
		switch {
		case e == "":
			return nil, fmt.Errorf("empty name in %s list %q", t.keyword, s)
		case e[0] == '!':
			return nil, fmt.Errorf("negated name %q: %s lists cannot negate (use a -list)", e, t.keyword)
		}
	}
	return entries, nil
}

// expand turns the entries of a replacing, '+' or '^' list into the names
// offload implements, in order, with warnings for those it lacks.
func (t *algTable) expand(entries []string) (names, warns []string, err error) {
	for _, e := range entries {
		got := matching(t.supported, e)
		names = appendNew(names, got...)
		if len(got) > 0 {
			continue
		}
		known := matching(t.openssh, e)
		if len(known) == 0 {
			return nil, nil, fmt.Errorf("unknown %s algorithm %q (offload implements %s)", t.keyword, e, strings.Join(t.supported, ","))
		}
		for _, k := range known {
			if why := refusedAlg(t.list, k); why != "" {
				return nil, nil, fmt.Errorf("%q: %s", k, why)
			}
		}
		warns = append(warns, fmt.Sprintf("%s is not implemented by offload; left out: %s", e, inertAlg(t.list, known[0])))
	}
	return names, warns, nil
}

// remove takes the entries of a '-' list from the defaults. An entry that
// removes nothing is a warning: an algorithm offload does not implement
// (nothing to remove), or an unknown name (perhaps a typing mistake that
// leaves the algorithm meant on).
func (t *algTable) remove(patterns []string) (names, warns []string, err error) {
	names = slices.Clone(t.def)
	for _, p := range patterns {
		n := len(names)
		names = slices.DeleteFunc(names, func(a string) bool { return match.Glob(a, p) })
		switch {
		case len(names) < n || len(matching(t.supported, p)) > 0:
		case len(matching(t.openssh, p)) > 0:
			warns = append(warns, fmt.Sprintf("%s is not implemented by offload; nothing to remove", p))
		default:
			warns = append(warns, fmt.Sprintf("unknown %s algorithm %q in a removal list; ignored", t.keyword, p))
		}
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("-%s leaves no %s", strings.Join(patterns, ","), t.keyword)
	}
	return names, warns, nil
}

func matching(names []string, pattern string) []string {
	var out []string
	for _, n := range names {
		if match.Glob(n, pattern) {
			out = append(out, n)
		}
	}
	return out
}
