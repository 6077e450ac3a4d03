package config

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/transport"
)

// AlgList names one of the algorithm lists an sshd_config sets.
type AlgList int

const (
	CipherList AlgList = iota
	KexList
	MACList
	HostKeyAlgList
	PubkeyList // PubkeyAcceptedAlgorithms: user keys and certificates
	CASigList  // CASignatureAlgorithms: signatures of certificate authorities
)

type algTable struct {
	keyword string
	// supported is every name offload's transport implements, in its
	// table order; def is the default offer.
	supported, def []string
	// primitives maps an SSH name to the catalog algorithms that carry it.
	primitives map[string][]string
}

// The lists come from the transport, so that the configuration accepts
// exactly what the server implements. The cipher default is the table
// order; the server reorders it by calibration unless Ciphers is set.
var algTables = map[AlgList]*algTable{
	CipherList: {
		keyword: "Ciphers", supported: transport.SupportedCiphers(), def: transport.DefaultCiphers(nil),
		primitives: map[string][]string{
			"chacha20-poly1305@openssh.com": {"chacha20", "poly1305"},
			"aes128-gcm@openssh.com":        {"aes128-gcm"},
			"aes256-gcm@openssh.com":        {"aes256-gcm"},
			"aes128-ctr":                    {"aes128-ctr"},
			"aes256-ctr":                    {"aes256-ctr"},
		},
	},
	KexList: {
		keyword: "KexAlgorithms", supported: transport.SupportedKex(), def: transport.DefaultKex(),
		primitives: map[string][]string{
			"mlkem768x25519-sha256":        {"ml-kem-768", "x25519", "sha256"},
			"curve25519-sha256":            {"x25519", "sha256"},
			"curve25519-sha256@libssh.org": {"x25519", "sha256"},
			"ecdh-sha2-nistp256":           {"ecdh-p256", "sha256"},
			"ecdh-sha2-nistp384":           {"ecdh-p384", "sha384"},
		},
	},
	MACList: {
		keyword: "MACs", supported: transport.SupportedMACs(), def: transport.DefaultMACs(),
		primitives: map[string][]string{
			"hmac-sha2-256-etm@openssh.com": {"hmac-sha256"},
			"hmac-sha2-512-etm@openssh.com": {"hmac-sha512"},
			"hmac-sha2-256":                 {"hmac-sha256"},
			"hmac-sha2-512":                 {"hmac-sha512"},
		},
	},
	PubkeyList: {
		keyword: "PubkeyAcceptedAlgorithms", def: auth.DefaultPublicKeyAlgorithms,
		supported: append(slices.Clone(auth.DefaultPublicKeyAlgorithms), "ssh-rsa", "ssh-rsa-cert-v01@openssh.com"),
	},
	CASigList: {
		keyword: "CASignatureAlgorithms", def: auth.DefaultCASignatureAlgorithms,
		supported: append(slices.Clone(auth.DefaultCASignatureAlgorithms), "ssh-rsa"),
	},
	HostKeyAlgList: {
		keyword: "HostKeyAlgorithms", supported: transport.SupportedHostKeyAlgorithms(), def: transport.DefaultHostKeyAlgorithms(),
		primitives: map[string][]string{
			"ssh-ed25519":         {"ed25519"},
			"ecdsa-sha2-nistp256": {"ecdsa-p256-sha256"},
			"ecdsa-sha2-nistp384": {"ecdsa-p384-sha384"},
			"rsa-sha2-512":        {"rsa-pkcs1v15-sha512"},
			"rsa-sha2-256":        {"rsa-pkcs1v15-sha256"},
		},
	},
}

// Supported returns every algorithm name of list that offload implements,
// in the default preference order.
func Supported(list AlgList) []string { return slices.Clone(algTables[list].supported) }

// DefaultAlgorithms returns the list used when the configuration does not
// set one: the supported names less those off by default (the NIST-curve
// key exchanges, which scanners flag).
func DefaultAlgorithms(list AlgList) []string { return slices.Clone(algTables[list].def) }

// Primitives returns the catalog algorithms (provider package names) that
// carry the SSH algorithm name, or nil when the name is unknown.
func Primitives(sshName string) []string {
	for _, t := range algTables {
		if p, ok := t.primitives[sshName]; ok {
			return slices.Clone(p)
		}
	}
	return nil
}

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
// patterns; "^a,b" puts a and b first. Every name must be supported;
// an empty result is an error.
func ParseAlgList(list AlgList, arg string) ([]string, error) {
	t := algTables[list]
	if arg == "" {
		return nil, fmt.Errorf("empty %s list", t.keyword)
	}
	def := DefaultAlgorithms(list)
	op, body := arg[0], arg[1:]
	if op != '+' && op != '-' && op != '^' {
		op, body = 0, arg
	}
	names, err := splitNames(t, body, op == '-')
	if err != nil {
		return nil, err
	}
	var out []string
	switch op {
	case 0:
		out = names
	case '+':
		out = appendNew(slices.Clone(def), names...)
	case '^':
		out = appendNew(names, def...)
	case '-':
		out = slices.DeleteFunc(def, func(n string) bool { return matchesAny(names, n) })
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q leaves no %s", arg, t.keyword)
	}
	return out, nil
}

// maxAlgNames bounds the names (or patterns) in one algorithm list.
const maxAlgNames = 64

// splitNames splits a comma list, checking each name against the supported
// ones; patterns (allowed when removing) may hold wildcards instead.
func splitNames(t *algTable, s string, patterns bool) ([]string, error) {
	if strings.Count(s, ",") >= maxAlgNames {
		return nil, fmt.Errorf("more than %d names in a %s list", maxAlgNames, t.keyword)
	}
	var out []string
	for n := range strings.SplitSeq(s, ",") {
		if n == "" {
			return nil, fmt.Errorf("empty name in %s list %q", t.keyword, s)
		}
		if patterns && strings.ContainsAny(n, "*?[") {
			if _, err := path.Match(n, ""); err != nil {
				return nil, fmt.Errorf("bad pattern %q", n)
			}
		} else if !slices.Contains(t.supported, n) {
			return nil, fmt.Errorf("unsupported %s algorithm %q (supported: %s)", t.keyword, n, strings.Join(t.supported, ","))
		}
		out = appendNew(out, n)
	}
	return out, nil
}

func appendNew(dst []string, names ...string) []string {
	for _, n := range names {
		if !slices.Contains(dst, n) {
			dst = append(dst, n)
		}
	}
	return dst
}

func matchesAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
