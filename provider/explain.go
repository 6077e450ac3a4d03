package provider

import (
	"fmt"
	"math/bits"
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
	// Warnings are policy entries that do not take effect as written
	// (a pin naming a provider that is not registered or cannot serve
	// the algorithm yet).
	Warnings []string `json:",omitempty"`
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
	for _, w := range e.Warnings {
		fmt.Fprintf(&b, "\n  warning: %s", w)
	}
	return b.String()
}

func (e *Explanation) clone() *Explanation {
	c := *e
	c.Candidates = append([]Candidate(nil), e.Candidates...)
	c.Warnings = append([]string(nil), e.Warnings...)
	return &c
}

// plan is an algorithm resolved against the providers, the policy and the
// measurements of one moment: the eligible providers best first (the
// fail-open order) with what to record about each, and the explanation.
// Plans are built when first needed and rebuilt when a provider is
// registered or changes, the policy changes, or a measurement arrives.
type plan struct {
	alg     *Algorithm
	ranked  []Provider
	sources []*source // provenance of a primitive built by ranked[i]
	ex      *Explanation
	err     error
	gen     uint64 // registry generation
	calGen  uint64 // calibrator generation
}

// opIndex is the position of a single-bit Op, for per-op tables.
func opIndex(op Op) int { return bits.TrailingZeros16(uint16(op)) }

// counter returns the source's counter for op (nil without metrics).
func (s *source) counter(op Op) *Counter { return s.counters[opIndex(op)] }

// Explain returns the provider that would serve alg now, the candidates
// and the reason. In ModeFastest it may run calibration for alg.
func (r *Registry) Explain(name string) (*Explanation, error) {
	alg, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	pl, err := r.plan(alg)
	if pl == nil {
		return nil, err
	}
	return pl.ex.clone(), err
}

// plan returns the current plan for alg, building it when the cached one
// is out of date.
func (r *Registry) plan(alg *Algorithm) (*plan, error) {
	gen, calGen := r.gen.Load(), r.cal.generation()
	cached := alg.index < len(r.plans) && catalog[alg.index] == alg
	if cached {
		if p := r.plans[alg.index].Load(); p != nil && p.gen == gen && p.calGen == calGen {
			return p, p.err
		}
	}
	p := r.buildPlan(alg)
	p.gen, p.calGen = gen, calGen
	if cached {
		r.plans[alg.index].Store(p)
	}
	return p, p.err
}

func (r *Registry) buildPlan(alg *Algorithm) *plan {
	r.mu.RLock()
	pol, ps, closed, perr := r.policy, append([]Provider(nil), r.providers...), r.closed, r.policyErr
	r.mu.RUnlock()
	pl := &plan{alg: alg, ex: &Explanation{Algorithm: alg.Name}}
	switch {
	case closed:
		pl.err = errRegistryClosed
		return pl
	case perr != nil:
		pl.err = perr
		return pl
	}
	var eligible []Provider
	for _, p := range ps {
		p = pol.without(alg.Name, p)
		c, ok := capabilityOf(p, alg.Name, opFor(alg.Family))
		if !ok {
			continue
		}
		cand := Candidate{Provider: p.Name(), Kind: p.Kind(), Flags: c.Flags, Excluded: excluded(&pol, alg.Name, p)}
		if cand.Excluded == "" {
			eligible = append(eligible, p)
		}
		pl.ex.Candidates = append(pl.ex.Candidates, cand)
	}
	pl.ex.Warnings = pinWarnings(&pol, alg, ps)
	if len(eligible) == 0 {
		pl.err = &NoProviderError{Algorithm: alg.Name, Reason: noneReason(pl.ex)}
		return pl
	}
	pl.ranked, pl.ex.Reason = r.rank(&pol, alg, eligible, ps)
	pl.ex.Chosen = pl.ranked[0].Name()
	r.attachMeasurements(alg, pl.ex, ps)
	pl.sources = r.sourcesFor(pl)
	return pl
}

// sourcesFor records, per ranked provider, the provenance and counters of
// the primitives it builds.
func (r *Registry) sourcesFor(pl *plan) []*source {
	out := make([]*source, len(pl.ranked))
	first := pl.ranked[0].Name()
	for i, p := range pl.ranked {
		s := &source{Provenance: Provenance{Algorithm: pl.alg.Name, Provider: p.Name(), Kind: p.Kind(), Reason: pl.ex.Reason}}
		if i > 0 {
			s.Fallback, s.FallbackFrom = true, first
			s.Reason = fmt.Sprintf("fallback: %s could not build it", first)
		}
		if r.metrics != nil {
			for _, op := range countedOps[pl.alg.Family] {
				s.counters[opIndex(op)] = r.metrics.Counter(p.Name(), pl.alg.Name, op)
			}
		}
		out[i] = s
	}
	return out
}

// countedOps are the operations counted for the primitives of a family.
var countedOps = map[Family][]Op{
	FamilyAEAD:         {OpSeal, OpOpen},
	FamilyStream:       {OpEncrypt},
	FamilyKeyStream:    {OpEncrypt},
	FamilyBlock:        {OpEncrypt},
	FamilyKeyAgreement: {OpGenerate, OpDerive},
	FamilyKEM:          {OpGenerate, OpDecapsulate},
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
		if len(ex.Warnings) > 0 {
			return "no registered provider offers it (" + strings.Join(ex.Warnings, "; ") + ")"
		}
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
// stay behind it, ranked as usual, as fail-open fallbacks. A pin no
// eligible provider answers is said so in the reason.
func (r *Registry) rank(pol *Policy, alg *Algorithm, eligible, all []Provider) ([]Provider, string) {
	prefix := ""
	if spec, ok := pol.Pins[alg.Name]; ok {
		if ranked, n := pinnedFirst(eligible, spec, pol.Mode); n > 0 {
			return ranked, fmt.Sprintf("pinned to %q", spec)
		}
		prefix = fmt.Sprintf("pin %q not in effect (%s); ", spec, pinProblem(spec, alg, all))
	}
	sortByKind(eligible, pol.Mode)
	if len(eligible) == 1 {
		return eligible, prefix + "only eligible provider"
	}
	if pol.Mode == ModePreferHardware {
		return eligible, prefix + "policy prefer-hardware: " + eligible[0].Kind().String() + " first"
	}
	if r.cal == nil {
		return eligible, prefix + "no calibration: ranked by kind (cpu, software, hardware)"
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
	return eligible, prefix + fmt.Sprintf("fastest measured: %s", scoreText(alg, scores[best]))
}

// pinnedFirst puts the providers spec names first (narrowed to the part
// it names) and the rest behind them in kind order; n is how many the
// pin names.
func pinnedFirst(ps []Provider, spec string, mode Mode) (ranked []Provider, n int) {
	var pinned, rest []Provider
	for _, p := range ps {
		if matchesProvider(p, spec) {
			pinned = append(pinned, p)
		} else {
			rest = append(rest, p)
		}
	}
	sortByKind(rest, mode)
	return append(narrow(pinned, spec), rest...), len(pinned)
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

func (r *Registry) attachMeasurements(alg *Algorithm, ex *Explanation, ps []Provider) {
	if r.cal == nil {
		return
	}
	for i := range ex.Candidates {
		for _, p := range ps {
			if p.Name() != ex.Candidates[i].Provider {
				continue
			}
			if m, ok := r.cal.Cached(alg, p); ok {
				ex.Candidates[i].Measurement = &m
			}
		}
	}
}

// kindOrder is the static ranking used without measurements.
func kindOrder(mode Mode, k Kind) int {
	order := [...]Kind{KindCPU, KindSoftware, KindHardware}
	if mode == ModePreferHardware {
		order = [...]Kind{KindHardware, KindCPU, KindSoftware}
	}
	for i, o := range order {
		if o == k {
			return i
		}
	}
	return len(order)
}

func sortByKind(ps []Provider, mode Mode) {
	sort.SliceStable(ps, func(i, j int) bool {
		return kindOrder(mode, ps[i].Kind()) < kindOrder(mode, ps[j].Kind())
	})
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
	pl, err := r.plan(alg)
	if err != nil {
		return Measurement{}, err
	}
	return r.cal.Measure(alg, pl.ranked[0])
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
