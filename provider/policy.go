package provider

import (
	"fmt"
	"sort"
	"strings"
)

// Mode is how the registry ranks the providers that may serve an algorithm.
type Mode int

const (
	// ModeFastest (the zero value) picks the provider measured fastest by
	// calibration; without a measurement, CPU before software before
	// hardware, since a device pays a fixed cost per call.
	ModeFastest Mode = iota
	// ModePreferHardware picks hardware, then CPU, then software.
	ModePreferHardware
	// ModeSoftwareOnly uses software providers only.
	ModeSoftwareOnly
)

var modeNames = map[Mode]string{
	ModeFastest:        "fastest",
	ModePreferHardware: "prefer-hardware",
	ModeSoftwareOnly:   "software-only",
}

func (m Mode) String() string {
	if s, ok := modeNames[m]; ok {
		return s
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// ParseMode parses "fastest", "prefer-hardware" or "software-only".
func ParseMode(s string) (Mode, error) {
	for m, name := range modeNames {
		if strings.EqualFold(s, name) {
			return m, nil
		}
	}
	return 0, &PolicyError{Entry: s, Reason: "mode must be fastest, prefer-hardware or software-only"}
}

// Policy steers the registry's choice. The zero value means "fastest", no
// pins, nothing denied.
type Policy struct {
	Mode Mode
	// Pins map an algorithm to the provider that must serve it, like
	// libmap.conf: "aes128-gcm" -> "cpu", "ecdh-p256" -> "pkcs11:token=unit0".
	Pins map[string]string
	// Deny lists entries disabled like `cryptoadm disable`: an algorithm
	// name ("aes128-ctr"), a provider ("software"), or one algorithm of one
	// provider ("aes128-gcm=software").
	Deny []DenyEntry
	// Strict turns off fail-open: when the chosen provider cannot build a
	// primitive, the request fails instead of trying the next candidate.
	Strict bool
}

// DenyEntry disables an algorithm, a provider, or one algorithm of one
// provider. An empty field matches everything.
type DenyEntry struct {
	Algorithm string
	Provider  string
}

func (d DenyEntry) String() string {
	switch {
	case d.Algorithm == "":
		return d.Provider
	case d.Provider == "":
		return d.Algorithm
	}
	return d.Algorithm + "=" + d.Provider
}

// parsePin parses "alg=provider".
func parsePin(s string) (alg, prov string, err error) {
	alg, prov, ok := strings.Cut(strings.TrimSpace(s), "=")
	alg, prov = strings.TrimSpace(alg), strings.TrimSpace(prov)
	if !ok || alg == "" || prov == "" {
		return "", "", &PolicyError{Entry: s, Reason: `pin must be "algorithm=provider"`}
	}
	if _, err := Lookup(alg); err != nil {
		return "", "", &PolicyError{Entry: s, Reason: fmt.Sprintf("unknown algorithm %q", alg)}
	}
	if err := checkProviderSpec(s, prov); err != nil {
		return "", "", err
	}
	return alg, prov, nil
}

// ParsePins parses a comma- or space-separated list of pins.
func ParsePins(s string) (map[string]string, error) {
	pins := map[string]string{}
	for _, f := range splitList(s) {
		alg, prov, err := parsePin(f)
		if err != nil {
			return nil, err
		}
		if old, dup := pins[alg]; dup && old != prov {
			return nil, &PolicyError{Entry: f, Reason: fmt.Sprintf("%s is already pinned to %q", alg, old)}
		}
		pins[alg] = prov
	}
	return pins, nil
}

// ParseDeny parses one deny entry: "alg", "provider", "alg=provider". A
// bare word is taken as an algorithm when the catalog knows it and as a
// provider otherwise; a provider may be a URI such as "pkcs11:token=web",
// whose own "=" signs are kept ("aes128-gcm=pkcs11:token=web" denies one
// algorithm of that token).
func ParseDeny(s string) (DenyEntry, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DenyEntry{}, &PolicyError{Entry: s, Reason: "empty deny entry"}
	}
	if alg, prov, ok := strings.Cut(s, "="); ok && !strings.Contains(alg, ":") {
		if _, err := Lookup(alg); err != nil {
			return DenyEntry{}, &PolicyError{Entry: s, Reason: fmt.Sprintf(`unknown algorithm %q (want "algorithm", "provider" or "algorithm=provider")`, alg)}
		}
		if prov == "" {
			return DenyEntry{}, &PolicyError{Entry: s, Reason: "names no provider after \"=\""}
		}
		if err := checkProviderSpec(s, prov); err != nil {
			return DenyEntry{}, err
		}
		return DenyEntry{Algorithm: alg, Provider: prov}, nil
	}
	if _, err := Lookup(s); err == nil {
		return DenyEntry{Algorithm: s}, nil
	}
	if err := checkProviderSpec(s, s); err != nil {
		return DenyEntry{}, err
	}
	return DenyEntry{Provider: s}, nil
}

// ParseDenyList parses a comma- or space-separated list of deny entries.
func ParseDenyList(s string) ([]DenyEntry, error) {
	var out []DenyEntry
	for _, f := range splitList(s) {
		d, err := ParseDeny(f)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}

// String prints the policy in the syntax the Parse functions read.
func (p Policy) String() string {
	var b strings.Builder
	b.WriteString("mode=" + p.Mode.String())
	algs := make([]string, 0, len(p.Pins))
	for a := range p.Pins {
		algs = append(algs, a)
	}
	sort.Strings(algs)
	for _, a := range algs {
		b.WriteString(" pin:" + a + "=" + p.Pins[a])
	}
	for _, d := range p.Deny {
		b.WriteString(" deny:" + d.String())
	}
	return b.String()
}

// matchesProvider reports whether spec names p.
func matchesProvider(p Provider, spec string) bool {
	if spec == p.Name() {
		return true
	}
	if m, ok := p.(Matcher); ok {
		return m.Matches(spec)
	}
	return false
}

// Excluder is implemented by providers that can drop part of themselves
// for a deny entry naming that part: a PKCS #11 provider over several
// tokens answers "pkcs11:token=web" with a view without that token.
// partial is false when spec names none or all of the provider, which
// the usual matching then handles.
type Excluder interface {
	Exclude(spec string) (rest Provider, partial bool)
}

// without applies the deny entries (for alg; "" for signers) that name
// only part of prov, returning what is left.
func (p *Policy) without(alg string, prov Provider) Provider {
	for _, d := range p.Deny {
		if d.Provider == "" || (d.Algorithm != "" && d.Algorithm != alg) {
			continue
		}
		if ex, ok := prov.(Excluder); ok {
			if rest, partial := ex.Exclude(d.Provider); partial {
				prov = rest
			}
		}
	}
	return prov
}

func (p *Policy) denies(alg string, prov Provider) (DenyEntry, bool) {
	for _, d := range p.Deny {
		if d.Algorithm != "" && d.Algorithm != alg {
			continue
		}
		if d.Provider != "" && !matchesProvider(prov, d.Provider) {
			continue
		}
		return d, true
	}
	return DenyEntry{}, false
}

func (p *Policy) allowsKind(k Kind) bool {
	return p.Mode != ModeSoftwareOnly || k == KindSoftware
}
