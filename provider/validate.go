package provider

import (
	"errors"
	"fmt"
	"strings"
)

// Policy checks. New, Register and SetPolicy check the policy against the
// providers registered at the time:
//
//   - a pin or deny entry naming an unknown algorithm, a pin that is also
//     denied, and a pin whose providers cannot serve its algorithm are
//     errors naming the entry;
//   - a pin or deny entry naming a provider that is not registered is an
//     error for SetPolicy, and a warning for New and Register, where the
//     provider may be registered later;
//   - a pin a provider cannot serve *yet* (a PKCS #11 token configured but
//     not present, see PendingReporter) is a warning.
//
// Warnings are logged and shown by Explain.

// policyIssue is one finding of checkPolicy.
type policyIssue struct {
	entry, reason string
	fatal         bool
}

func (i policyIssue) err() error { return &PolicyError{Entry: i.entry, Reason: i.reason} }

func (i policyIssue) String() string { return fmt.Sprintf("policy entry %q: %s", i.entry, i.reason) }

// checkPolicy checks pol against ps; unknownFatal makes a provider that is
// not registered an error rather than a warning.
func checkPolicy(pol *Policy, ps []Provider, unknownFatal bool) []policyIssue {
	var out []policyIssue
	for alg, spec := range pol.Pins {
		out = append(out, specIssues(alg+"="+spec, spec, ps)...)
		out = append(out, checkPin(pol, alg, spec, ps, unknownFatal)...)
	}
	for _, d := range pol.Deny {
		out = append(out, specIssues(d.String(), d.Provider, ps)...)
		if d.Algorithm != "" {
			if _, err := Lookup(d.Algorithm); err != nil {
				out = append(out, policyIssue{d.String(), err.Error(), true})
			}
		}
		if d.Provider != "" && len(matching(ps, d.Provider)) == 0 {
			out = append(out, policyIssue{d.String(), unknownReason(d.Provider), unknownFatal})
		}
	}
	return out
}

func checkPin(pol *Policy, alg, spec string, ps []Provider, unknownFatal bool) []policyIssue {
	entry := alg + "=" + spec
	a, err := Lookup(alg)
	if err != nil {
		return []policyIssue{{entry, err.Error(), true}}
	}
	if spec == "" {
		return []policyIssue{{entry, "names no provider", true}}
	}
	var out []policyIssue
	if d, ok := pinDenied(pol, alg, spec, ps); ok {
		out = append(out, policyIssue{entry, fmt.Sprintf("is also denied by %q; remove one of the two", d), true})
	}
	ms := matching(ps, spec)
	switch {
	case len(ms) == 0:
		out = append(out, policyIssue{entry, unknownReason(spec), unknownFatal})
	case !anyServes(ms, spec, a):
		if pend := pending(ms); pend != "" {
			out = append(out, policyIssue{entry, fmt.Sprintf("%s does not offer %s yet (%s)", spec, alg, pend), false})
		} else {
			out = append(out, policyIssue{entry, fmt.Sprintf("%s does not offer %s", spec, alg), true})
		}
	}
	return out
}

func unknownReason(spec string) string {
	return fmt.Sprintf("no registered provider matches %q", spec)
}

// pinDenied reports a deny entry that takes away what the pin asks for:
// the algorithm altogether, or the pinned provider.
func pinDenied(pol *Policy, alg, spec string, ps []Provider) (string, bool) {
	ms := matching(ps, spec)
	for _, d := range pol.Deny {
		if d.Algorithm != "" && d.Algorithm != alg {
			continue
		}
		if d.Provider == "" || d.Provider == spec {
			return d.String(), true
		}
		for _, p := range ms {
			if matchesProvider(narrowOne(p, spec), d.Provider) {
				return d.String(), true
			}
		}
	}
	return "", false
}

func matching(ps []Provider, spec string) []Provider {
	var out []Provider
	for _, p := range ps {
		if matchesProvider(p, spec) {
			out = append(out, p)
		}
	}
	return out
}

func narrowOne(p Provider, spec string) Provider {
	if n, ok := p.(Narrower); ok {
		if q, err := n.Narrow(spec); err == nil {
			return q
		}
	}
	return p
}

func anyServes(ms []Provider, spec string, alg *Algorithm) bool {
	for _, p := range ms {
		if Supports(narrowOne(p, spec), alg.Name, opFor(alg.Family)) {
			return true
		}
	}
	return false
}

// pending describes what the providers have configured but not attached.
func pending(ps []Provider) string {
	var parts []string
	for _, p := range ps {
		if pr, ok := p.(PendingReporter); ok {
			parts = append(parts, pr.Pending()...)
		}
	}
	return strings.Join(parts, "; ")
}

// pinWarnings are the Explain warnings about alg's pin.
func pinWarnings(pol *Policy, alg *Algorithm, ps []Provider) []string {
	spec, ok := pol.Pins[alg.Name]
	if !ok {
		return nil
	}
	var out []string
	for _, i := range checkPin(pol, alg.Name, spec, ps, false) {
		out = append(out, i.String())
	}
	return out
}

// pinProblem says in a few words why a pin took no effect.
func pinProblem(spec string, alg *Algorithm, ps []Provider) string {
	ms := matching(ps, spec)
	if len(ms) == 0 {
		return "no registered provider matches it"
	}
	if pend := pending(ms); pend != "" {
		return "it does not offer " + alg.Name + " yet: " + pend
	}
	return "it does not offer " + alg.Name
}

// split returns the errors and the warnings among issues.
func split(issues []policyIssue) (error, []string) {
	var errs []error
	var warns []string
	for _, i := range issues {
		if i.fatal {
			errs = append(errs, i.err())
		} else {
			warns = append(warns, i.String())
		}
	}
	return errors.Join(errs...), warns
}
