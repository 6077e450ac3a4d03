package auth

import (
	"slices"
	"strings"
)

// Method names.
const (
	methodNone        = "none"
	methodPublicKey   = "publickey"
	methodPassword    = "password"
	methodKbdInt      = "keyboard-interactive"
	kbdIntDevicePAM   = "pam"
	maxListMethods    = 16
	maxMethodsLists   = 64
	authMethodsAnyTag = "any"
)

// knownMethods may appear in AuthenticationMethods. "none" is a method
// there as in OpenSSH: it completes only as an empty password does
// (decider.none), so a list naming it lets nobody else in; it is useful
// as a server-wide value that Match blocks override.
var knownMethods = []string{methodNone, methodPublicKey, methodPassword, methodKbdInt}

// validateLists checks AuthenticationMethods: known methods only,
// bounded, and "any" alone.
func (c *Config) validateLists() error {
	if len(c.AuthenticationMethods) > maxMethodsLists {
		return &ConfigError{"AuthenticationMethods", "too many lists"}
	}
	for _, l := range c.AuthenticationMethods {
		if len(l) == 1 && l[0] == authMethodsAnyTag && len(c.AuthenticationMethods) == 1 {
			continue
		}
		if len(l) == 0 || len(l) > maxListMethods {
			return &ConfigError{"AuthenticationMethods", "a list must name 1 to 16 methods"}
		}
		for _, m := range l {
			name, sub, _ := strings.Cut(m, ":")
			if !slices.Contains(knownMethods, name) || (sub != "" && !(name == methodKbdInt && sub == kbdIntDevicePAM)) {
				return &ConfigError{"AuthenticationMethods", "unknown method " + quote(m)}
			}
		}
	}
	return nil
}

// enabledLists drops the lists that name a disabled method (OpenSSH logs
// and skips them); nil means any single method will do.
func (s *settings) enabledLists() [][]string {
	var out [][]string
	for _, l := range s.AuthenticationMethods {
		if len(l) == 1 && l[0] == authMethodsAnyTag {
			return nil
		}
		ok := true
		for _, m := range l {
			name, sub, _ := strings.Cut(m, ":")
			ok = ok && (name == methodNone || slices.Contains(s.methods, name)) && (sub == "" || s.UsePAM)
		}
		if !ok {
			s.log.Warn("auth: AuthenticationMethods list names a disabled method; skipped", "list", strings.Join(l, ","))
			continue
		}
		out = append(out, l)
	}
	if len(s.AuthenticationMethods) > 0 && out == nil {
		// every list was dropped: nothing can complete, so nothing may log in
		s.log.Error("auth: no AuthenticationMethods left after eliminating disabled methods")
		out = [][]string{}
	}
	return out
}

// progress tracks AuthenticationMethods for one connection: the lists
// still open, each as the methods left to complete.
type progress struct {
	lists [][]string // nil: any single method completes
	done  []string   // methods completed so far
}

func newProgress(lists [][]string) *progress {
	if lists == nil {
		return &progress{}
	}
	p := &progress{lists: make([][]string, len(lists))}
	for i, l := range lists {
		p.lists[i] = slices.Clone(l)
	}
	return p
}

// allowed reports whether method (with the kbd-int device asked for,
// if any) is next in some open list.
func (p *progress) allowed(method string) bool {
	if p.lists == nil {
		return true
	}
	for _, l := range p.lists {
		if len(l) > 0 && methodIs(l[0], method) {
			return true
		}
	}
	return false
}

func methodIs(entry, method string) bool {
	name, _, _ := strings.Cut(entry, ":")
	return name == method
}

// complete records that method succeeded; it reports whether a list is
// now complete (the login succeeds) — otherwise the success is partial.
func (p *progress) complete(method string) bool {
	p.done = append(p.done, method)
	if p.lists == nil {
		return true
	}
	for i, l := range p.lists {
		if len(l) > 0 && methodIs(l[0], method) {
			p.lists[i] = l[1:]
			if len(p.lists[i]) == 0 {
				return true
			}
		}
	}
	return false
}

// next lists the methods that may continue: the first of each open
// list, among the enabled ones, in the order of enabled.
func (p *progress) next(enabled []string) []string {
	if p.lists == nil {
		return enabled
	}
	var out []string
	for _, m := range enabled {
		if p.allowed(m) {
			out = append(out, m)
		}
	}
	return out
}
