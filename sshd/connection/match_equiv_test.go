package connection

import (
	"strings"
	"testing"

	"github.com/offload/offload/sshd/match"
)

// FuzzMatchEquivalence checks sshd/match against this package's own
// matchers on the same inputs before they are replaced by it.
func FuzzMatchEquivalence(f *testing.F) {
	f.Add("LC_*", "LC_ALL")
	f.Add("a*b*c,!ab?c", "axxbyyc")
	f.Add("*?*?*?*?*?*?*?*?*?*?*?*?b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	f.Fuzz(func(t *testing.T, p, s string) {
		// The one intended difference: a '*' in the string met by a '*' in
		// the pattern was taken as a literal here, so "*x" did not match
		// "*"; in OpenSSH (and sshd/match) a pattern's '*' is always a
		// wildcard.
		if strings.Contains(s, "*") {
			return
		}
		if globMatch(p, s) != match.Glob(s, p) {
			t.Fatalf("globMatch(%q, %q) = %v, match.Glob differs", p, s, globMatch(p, s))
		}
		list := strings.Split(p, ",")
		if old, got := matchPatternList(list, s), match.Patterns(s, list) == match.Matched; old != got {
			t.Fatalf("matchPatternList(%q, %q) = %v, match.Patterns %v", list, s, old, got)
		}
		if matchAny(list, s) != match.AnyGlob(s, list) {
			t.Fatalf("matchAny(%q, %q) differs from match.AnyGlob", list, s)
		}
	})
}
