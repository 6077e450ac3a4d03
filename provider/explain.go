package provider

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// Candidate is one provider considered for an algorithm.
type Candidate struct {
	Provider string
	Kind     Kind
	Flags    Flag
	// Measurement is the calibration result, when there is one.
	Measurement *Measurement `json:",omitempty"`
	// Excluded says why the candidate may not serve; empty when eligible.
	Excluded string `json:",omitempty"`
}

// Explanation says which provider serves an algorithm and why.
type Explanation struct {
	Algorithm  string
	Chosen     string
	Reason     string
	Candidates []Candidate

	ranked []Provider // eligible providers, best first
}

func (e *Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (%s)", e.Algorithm, e.Chosen, e.Reason)
	for _, c := range e.Candidates {
		fmt.Fprintf(&b, "\n  %-24s %-8s", c.Provider, c.Kind)
		if c.Measurement != nil {
			fmt.Fprintf(&b, " %s", c.Measurement.Summary())
		}
		if c.Excluded != "" {
			fmt.Fprintf(&b, " excluded: %s", c.Excluded)
		}
	}
	return b.String()
}

// Explain returns the provider that would serve alg now, the candidates
// and the reason. In ModeFastest it may run calibration for alg.
func (r *Registry) Explain(name string) (*Explanation, error) {
	alg, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return r.explain(alg)
}

func (r *Registry) explain(alg *Algorithm) (*Explanation, error) {
	pol := r.Policy()
	ex := &Explanation{Algorithm: alg.Name}
	var eligible []Provider
	for _, p := range r.Providers() {
		c, ok := capabilityOf(p, alg.Name, opFor(alg.Family))
		if !ok {
			continue
		}
		cand := Candidate{Provider: p.Name(), Kind: p.Kind(), Flags: c.Flags, Excluded: excluded(&pol, alg.Name, p)}
		if cand.Excluded == "" {
			eligible = append(eligible, p)
		}
		ex.Candidates = append(ex.Candidates, cand)
	}
	if len(eligible) == 0 {
		return ex, &NoProviderError{Algorithm: alg.Name, Reason: noneReason(ex)}
	}
	ex.ranked, ex.Reason = r.rank(&pol, alg, eligible)
	ex.Chosen = ex.ranked[0].Name()
	r.attachMeasurements(alg, ex)
	return ex, nil
}

func excluded(pol *Policy, alg string, p Provider) string {
	if d, ok := pol.denies(alg, p); ok {
		return fmt.Sprintf("denied by %q", d.String())
	}
	if !pol.allowsKind(p.Kind()) {
		return "policy software-only"
	}
	if spec, pinned := pol.Pins[alg]; pinned && pol.Strict && !matchesProvider(p, spec) {
		return fmt.Sprintf("pinned to %q (strict)", spec)
	}
	return ""
}

func noneReason(ex *Explanation) string {
	if len(ex.Candidates) == 0 {
		return "no registered provider offers it"
	}
	var parts []string
	for _, c := range ex.Candidates {
		parts = append(parts, c.Provider+": "+c.Excluded)
	}
	return "every candidate is excluded (" + strings.Join(parts, "; ") + ")"
}

// rank orders eligible providers best first and says why the first won.
// A pinned provider comes first; unless the policy is strict the others
// stay behind it, ranked as usual, as fail-open fallbacks.
func (r *Registry) rank(pol *Policy, alg *Algorithm, eligible []Provider) ([]Provider, string) {
	if spec, ok := pol.Pins[alg.Name]; ok {
		return pinnedFirst(eligible, spec, pol.Mode), fmt.Sprintf("pinned to %q", spec)
	}
	sortByKind(eligible, pol.Mode)
	if len(eligible) == 1 {
		return eligible, "only eligible provider"
	}
	if pol.Mode == ModePreferHardware {
		return eligible, "policy prefer-hardware: " + eligible[0].Kind().String() + " first"
	}
	if r.cal == nil {
		return eligible, "no calibration: ranked by kind (cpu, software, hardware)"
	}
	scores := make(map[Provider]float64, len(eligible))
	for _, p := range eligible {
		if m, err := r.cal.Measure(alg, p); err == nil {
			scores[p] = m.Score()
		} else {
			r.log.Warn("calibration failed", "algorithm", alg.Name, "provider", p.Name(), "err", err)
		}
	}
	sort.SliceStable(eligible, func(i, j int) bool { return scores[eligible[i]] > scores[eligible[j]] })
	best := eligible[0]
	return eligible, fmt.Sprintf("fastest measured: %s", scoreText(alg, scores[best]))
}

// pinnedFirst puts the providers spec names first (narrowed to the part
// it names) and the rest behind them in kind order.
func pinnedFirst(ps []Provider, spec string, mode Mode) []Provider {
	var pinned, rest []Provider
	for _, p := range ps {
		if matchesProvider(p, spec) {
			pinned = append(pinned, p)
		} else {
			rest = append(rest, p)
		}
	}
	sortByKind(rest, mode)
	return append(narrow(pinned, spec), rest...)
}

// narrow replaces providers that can serve part of themselves by the part
// the pin names.
func narrow(ps []Provider, spec string) []Provider {
	out := make([]Provider, 0, len(ps))
	for _, p := range ps {
		if n, ok := p.(Narrower); ok {
			if q, err := n.Narrow(spec); err == nil {
				p = q
			}
		}
		out = append(out, p)
	}
	return out
}

func scoreText(alg *Algorithm, s float64) string {
	if alg.Bulk {
		return fmt.Sprintf("%.0f MB/s", s)
	}
	return fmt.Sprintf("%.0f ops/s", s)
}

func (r *Registry) attachMeasurements(alg *Algorithm, ex *Explanation) {
	if r.cal == nil {
		return
	}
	for i := range ex.Candidates {
		p, err := r.Provider(ex.Candidates[i].Provider)
		if err != nil {
			continue
		}
		if m, ok := r.cal.Cached(alg, p); ok {
			ex.Candidates[i].Measurement = &m
		}
	}
}

// kindOrder is the static ranking used without measurements.
func kindOrder(mode Mode, k Kind) int {
	if mode == ModePreferHardware {
		return map[Kind]int{KindHardware: 0, KindCPU: 1, KindSoftware: 2}[k]
	}
	return map[Kind]int{KindCPU: 0, KindSoftware: 1, KindHardware: 2}[k]
}

func sortByKind(ps []Provider, mode Mode) {
	sort.SliceStable(ps, func(i, j int) bool {
		return kindOrder(mode, ps[i].Kind()) < kindOrder(mode, ps[j].Kind())
	})
}

// RedactRef hides secrets (pin-value) in a key reference so it can be
// logged or put in an error.
func RedactRef(ref string) string {
	head, query, ok := strings.Cut(ref, "?")
	if !ok {
		return ref
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		if k, err := url.QueryUnescape(k); err == nil && strings.EqualFold(k, "pin-value") {
			parts[i] = "pin-value=REDACTED"
		}
	}
	return head + "?" + strings.Join(parts, "&")
}

// Measure returns the calibration measurement of the provider that would
// serve alg now, measuring it if needed. The SSH server uses it to decide
// whether AES-GCM is fast enough to offer first. It fails when the
// registry has no Calibrator.
func (r *Registry) Measure(name string) (Measurement, error) {
	alg, err := Lookup(name)
	if err != nil {
		return Measurement{}, err
	}
	if r.cal == nil {
		return Measurement{}, fmt.Errorf("provider: no calibrator configured to measure %s", name)
	}
	ex, err := r.explain(alg)
	if err != nil {
		return Measurement{}, err
	}
	return r.cal.Measure(alg, ex.ranked[0])
}

// RankAlgorithms orders names (algorithms of one family) by the measured
// speed of the provider that would serve each, fastest first; ties and
// algorithms that cannot be measured keep their given order, behind the
// measured ones. The SSH server orders its cipher offer with it, so that
// AES-GCM comes first only where the AES-GCM that would serve is fast.
func (r *Registry) RankAlgorithms(names []string) []string {
	scores := make(map[string]float64, len(names))
	for _, n := range names {
		if m, err := r.Measure(n); err == nil {
			scores[n] = m.Score()
		}
	}
	out := append([]string(nil), names...)
	sort.SliceStable(out, func(i, j int) bool { return scores[out[i]] > scores[out[j]] })
	return out
}
