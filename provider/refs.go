package provider

import (
	"fmt"
	"net/url"
	"strings"
)

// Key and provider references may be URIs ("pkcs11:token=web?pin-value=…",
// "file:/etc/key"). The registry knows no scheme: it treats the query
// attributes pin-value and pin-source as secrets, whatever the scheme, and
// leaves the rest of a scheme's syntax to the providers that use it
// (SpecChecker).

// secretAttrs are the query attributes that carry or locate a PIN.
var secretAttrs = []string{"pin-value", "pin-source"}

// RedactRef hides secrets in a key or provider reference so it can be
// logged or put in an error: the value of every pin-value query attribute
// becomes REDACTED.
func RedactRef(ref string) string {
	head, query, ok := strings.Cut(ref, "?")
	if !ok {
		return ref
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		if queryAttr(p) == "pin-value" {
			parts[i] = "pin-value=REDACTED"
		}
	}
	return head + "?" + strings.Join(parts, "&")
}

// queryAttr returns the unescaped, lower-cased name of one query
// attribute "name=value", or "" when the name does not unescape.
func queryAttr(p string) string {
	k, _, _ := strings.Cut(p, "=")
	k, err := url.QueryUnescape(k)
	if err != nil {
		return ""
	}
	return strings.ToLower(k)
}

// scheme returns the scheme of a URI reference ("pkcs11" for
// "pkcs11:token=web") and whether spec has one, as RFC 3986 spells it:
// a letter, then letters, digits, '+', '-' or '.', then ':'.
func scheme(spec string) (string, bool) {
	s, _, ok := strings.Cut(spec, ":")
	if !ok || s == "" || !isAlpha(s[0]) {
		return "", false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlpha(c) && (c < '0' || c > '9') && c != '+' && c != '-' && c != '.' {
			return "", false
		}
	}
	return s, true
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// checkProviderSpec refuses a provider spec that is a URI with a bad
// percent-encoding (it would match nothing, and the entry would select
// or deny nothing) or with a PIN: a policy entry only selects, and
// policies are printed (Explain, sshd -T, logs). A scheme's own syntax is
// checked by the providers that implement SpecChecker.
func checkProviderSpec(entry, spec string) error {
	sch, ok := scheme(spec)
	if !ok {
		return nil
	}
	if _, err := url.PathUnescape(spec); err != nil {
		return &PolicyError{Entry: RedactRef(entry), Reason: fmt.Sprintf("bad %s: URI: bad percent-encoding", sch)}
	}
	_, query, _ := strings.Cut(spec, "?")
	for p := range strings.SplitSeq(query, "&") {
		for _, s := range secretAttrs {
			if queryAttr(p) == s {
				return &PolicyError{Entry: RedactRef(entry), Reason: "a policy entry selects tokens and takes no pin-value or pin-source; give the PIN to the provider"}
			}
		}
	}
	return nil
}

// specIssues asks the providers that know a scheme's syntax about spec.
func specIssues(entry, spec string, ps []Provider) []policyIssue {
	var out []policyIssue
	for _, p := range ps {
		if c, ok := p.(SpecChecker); ok {
			if err := c.CheckSpec(spec); err != nil {
				out = append(out, policyIssue{RedactRef(entry), err.Error(), true})
				break
			}
		}
	}
	return out
}
