package argv

import (
	"errors"
	"slices"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in       string
		comments bool
		want     []string
	}{
		{"", false, nil},
		{"  a \t b  ", false, []string{"a", "b"}},
		{`"a b"c d`, false, []string{"a bc", "d"}},
		{`a"b c"d`, false, []string{"ab cd"}},
		{`a\b`, false, []string{`a\b`}},
		{`a\\b`, false, []string{`a\b`}},
		{`a\ b`, false, []string{"a b"}},
		{`"a\ b"`, false, []string{`a\ b`}},
		{`'a\'b'`, false, []string{"a'b"}},
		{`'a\"b'`, false, []string{`a"b`}},
		{`a\`, false, []string{`a\`}},
		{`"" ''`, false, []string{"", ""}},
		{"a #b", true, []string{"a"}},
		{"a #b", false, []string{"a", "#b"}},
		{`a#b "#c" \#d`, true, []string{"a#b", "#c", `\#d`}},
	} {
		got, err := Split(tc.in, tc.comments)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Split(%q, %v) = %q, %v; want %q", tc.in, tc.comments, got, err, tc.want)
		}
	}
	for _, bad := range []string{`"a`, `a'`, `'a\'`, `"a\"`} {
		if _, err := Split(bad, false); !errors.Is(err, ErrUnterminatedQuote) {
			t.Errorf("Split(%q): %v, want ErrUnterminatedQuote", bad, err)
		}
	}
}

// FuzzSplit: any line splits or fails with ErrUnterminatedQuote; every
// argument it yields, quoted, reads back as itself; and the arguments
// quoted and joined read back as the same list.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{`a "b c" 'd\'e' f\ g \\ h\`, "x #y", `"#" \#`, ""} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, comments bool) {
		args, err := Split(s, comments)
		if err != nil {
			if !errors.Is(err, ErrUnterminatedQuote) {
				t.Fatalf("Split(%q): %v", s, err)
			}
			return
		}
		var line string
		for i, a := range args {
			if back, err := Split(Quote(a), true); err != nil || len(back) != 1 || back[0] != a {
				t.Fatalf("Quote(%q) = %q reads back as %q, %v", a, Quote(a), back, err)
			}
			if i > 0 {
				line += " "
			}
			line += Quote(a)
		}
		if back, err := Split(line, true); err != nil || !slices.Equal(back, args) {
			t.Fatalf("%q: arguments %q, quoted %q, read back %q, %v", s, args, line, back, err)
		}
	})
}
