package transport

import (
	"fmt"
	"slices"
)

// AlgorithmKind is the KEXINIT list an SSH algorithm is negotiated in.
type AlgorithmKind int

const (
	KindCipher  AlgorithmKind = iota + 1 // encryption_algorithms
	KindMAC                              // mac_algorithms
	KindKex                              // kex_algorithms
	KindHostKey                          // server_host_key_algorithms
)

var kindNames = map[AlgorithmKind]string{KindCipher: "cipher", KindMAC: "mac", KindKex: "kex", KindHostKey: "hostkey"}

func (k AlgorithmKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Algorithm describes one SSH algorithm the transport implements: a row
// of its tables, for the configuration, `sshd -T` and explanations.
type Algorithm struct {
	Kind AlgorithmKind
	Name string
	// Default is true when the algorithm is in the default offer.
	Default bool
	// Primitives are the registry catalog algorithms (provider.Lookup
	// names) the SSH algorithm is assembled from.
	Primitives []string
	// Warning is what security scanners say against the algorithm; an
	// algorithm with one is left out of ProfileHardened.
	Warning string
}

// Algorithms returns every SSH algorithm the transport implements, kind by
// kind (ciphers, MACs, key exchanges, host-key algorithms), each kind in
// its table order, which is the default preference. The slice is new on
// every call.
func Algorithms() []Algorithm {
	var out []Algorithm
	for i := range cipherTable {
		c := &cipherTable[i]
		out = append(out, Algorithm{KindCipher, c.name, c.onByDefault, c.primitives(), c.warn})
	}
	for i := range macTable {
		m := &macTable[i]
		out = append(out, Algorithm{KindMAC, m.name, m.onByDefault, m.primitives(), m.warn})
	}
	for i := range kexTable {
		k := &kexTable[i]
		out = append(out, Algorithm{KindKex, k.name, k.onByDefault, k.primitives(), k.warn})
	}
	for i := range hostKeyTable {
		h := &hostKeyTable[i]
		out = append(out, Algorithm{KindHostKey, h.name, h.onByDefault, h.primitives(), h.warn})
	}
	return out
}

// LookupAlgorithm returns the row for an SSH algorithm name of kind.
func LookupAlgorithm(kind AlgorithmKind, name string) (Algorithm, bool) {
	all := Algorithms()
	i := slices.IndexFunc(all, func(a Algorithm) bool { return a.Kind == kind && a.Name == name })
	if i < 0 {
		return Algorithm{}, false
	}
	return all[i], true
}

func nonEmpty(names ...string) []string {
	return slices.DeleteFunc(names, func(n string) bool { return n == "" })
}

func (c *cipherSpec) primitives() []string {
	return nonEmpty(c.aead, c.stream, c.block, c.keyStream, c.oneTimeMAC)
}

func (m *macSpec) primitives() []string { return nonEmpty(m.hmac) }

func (k *kexSpec) primitives() []string { return nonEmpty(k.kem, k.agree, k.hash) }

func (h *hostKeySpec) primitives() []string { return nonEmpty(h.signature) }

// Profile names a set of default algorithm lists.
type Profile string

const (
	// ProfileDefault lets every common client connect on its own
	// defaults; ssh-audit warns only where it warns about OpenSSH's own
	// defaults (docs/security.md).
	ProfileDefault Profile = "default"
	// ProfileHardened leaves out every default algorithm that has a
	// Warning, for a scan without warnings: libssh2's CTR ciphers and
	// OpenSSH 8.5 to 9.8 clients' post-quantum exchange go with them.
	ProfileHardened Profile = "hardened"
)

// ParseProfile checks a profile name; "" is ProfileDefault.
func ParseProfile(s string) (Profile, error) {
	switch Profile(s) {
	case "", ProfileDefault:
		return ProfileDefault, nil
	case ProfileHardened:
		return ProfileHardened, nil
	}
	return "", fmt.Errorf("transport: unknown crypto profile %q (default, hardened)", s)
}

// Defaults returns the profile's default list of kind, in preference
// order (table order; for ciphers the client's order decides what is
// used, see CipherSelection).
func (p Profile) Defaults(kind AlgorithmKind) []string {
	var out []string
	for _, a := range Algorithms() {
		if a.Kind == kind && a.Default && (p != ProfileHardened || a.Warning == "") {
			out = append(out, a.Name)
		}
	}
	return out
}
