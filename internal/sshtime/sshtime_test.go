package sshtime

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	good := map[string]time.Duration{
		"0": 0, "90": 90 * time.Second, "2m": 2 * time.Minute, "1h30m": 90 * time.Minute,
		"1W2D": 9 * 24 * time.Hour, "10s5": 15 * time.Second, "366d": Max,
	}
	for in, want := range good {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "m", "1x", "-1", "1.5s", "1234567890", "367d", "107000d", "53w", "1h "} {
		if d, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, d)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"90", "1h30m", "999999999w", "366d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := Parse(s); err == nil && (d < 0 || d > Max) {
			t.Fatalf("Parse(%q) = %v, outside [0, %v]", s, d, Max)
		}
	})
}
