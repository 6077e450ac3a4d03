package penalty

import (
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTracker(t *testing.T, edit func(*Config)) (*Tracker, *clock) {
	t.Helper()
	c := Defaults()
	if edit != nil {
		edit(&c)
	}
	clk := &clock{t: time.Unix(1e9, 0)}
	tr, err := New(&c, nil, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	return tr, clk
}

var a1, a2 = netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")

func refusedFor(t *testing.T, tr *Tracker, a netip.Addr) string {
	t.Helper()
	_, err := tr.Admit(a)
	var r *Refused
	if err == nil {
		return ""
	}
	if !errors.As(err, &r) {
		t.Fatalf("Admit: %v", err)
	}
	return r.Reason
}

// OpenSSH's defaults: authfail is 5s and min 15s, so the fourth failed
// connection within the window gets the source refused, for 20s.
func TestAuthFailAccumulates(t *testing.T) {
	tr, clk := newTracker(t, nil)
	for i := 0; i < 3; i++ {
		tr.Penalize(a1, AuthFail)
		if r := refusedFor(t, tr, a1); r != "" {
			t.Fatalf("refused after %d failures (15s is not more than min): %s", i+1, r)
		}
	}
	tr.Penalize(a1, AuthFail)
	if r := refusedFor(t, tr, a1); r != "penalty: failed authentication" {
		t.Fatalf("after 4 failures: %q", r)
	}
	if r := refusedFor(t, tr, a2); r != "" {
		t.Fatalf("another source refused: %s", r)
	}
	clk.add(19 * time.Second)
	if refusedFor(t, tr, a1) == "" {
		t.Fatal("admitted before the penalty ran out")
	}
	clk.add(2 * time.Second)
	if r := refusedFor(t, tr, a1); r != "" {
		t.Fatalf("still refused after 21s: %s", r)
	}
	if len(tr.Penalties()) != 0 {
		t.Fatalf("expired penalties kept: %+v", tr.Penalties())
	}
}

func TestCrashAndMax(t *testing.T) {
	tr, clk := newTracker(t, nil)
	tr.Penalize(a1, Crash) // 90s > min: active at once
	if r := refusedFor(t, tr, a1); r != "penalty: caused crash" {
		t.Fatalf("after a crash: %q", r)
	}
	for i := 0; i < 20; i++ {
		tr.Penalize(a1, Crash)
	}
	p := tr.Penalties()
	if len(p) != 1 || p[0].Left != 10*time.Minute || !p[0].Active {
		t.Fatalf("penalties %+v, want one capped at max 10m", p)
	}
	clk.add(10*time.Minute + time.Second)
	if r := refusedFor(t, tr, a1); r != "" {
		t.Fatalf("refused after max: %s", r)
	}
}

func TestNetBlockAndExempt(t *testing.T) {
	tr, _ := newTracker(t, func(c *Config) {
		c.Bits4 = 24
		c.Exempt = []string{"127.0.0.3", "10.*"}
	})
	tr.Penalize(a1, Crash)
	if refusedFor(t, tr, netip.MustParseAddr("127.0.0.9")) == "" {
		t.Fatal("a neighbour in the same /24 admitted")
	}
	if r := refusedFor(t, tr, a2); r != "" {
		t.Fatalf("exempt address refused: %s", r)
	}
	tr.Penalize(netip.MustParseAddr("10.1.2.3"), Crash)
	if r := refusedFor(t, tr, netip.MustParseAddr("10.1.2.3")); r != "" {
		t.Fatalf("exempt pattern penalised: %s", r)
	}
	if r := refusedFor(t, tr, netip.MustParseAddr("::ffff:127.0.0.5")); r == "" {
		t.Fatal("IPv4-mapped address not treated as IPv4")
	}
}

func TestOverflow(t *testing.T) {
	tr, clk := newTracker(t, func(c *Config) { c.MaxSources4 = 2 })
	tr.Penalize(netip.MustParseAddr("192.0.2.1"), Crash)
	clk.add(time.Second)
	tr.Penalize(netip.MustParseAddr("192.0.2.2"), Crash)
	tr.Penalize(netip.MustParseAddr("192.0.2.3"), Crash) // permissive: the soonest to expire goes
	if refusedFor(t, tr, netip.MustParseAddr("192.0.2.1")) != "" || refusedFor(t, tr, netip.MustParseAddr("192.0.2.3")) == "" {
		t.Fatalf("permissive overflow kept the wrong entries: %+v", tr.Penalties())
	}

	tr, _ = newTracker(t, func(c *Config) { c.MaxSources4, c.Overflow4, c.Exempt = 1, DenyAll, []string{"127.0.0.3"} })
	tr.Penalize(netip.MustParseAddr("192.0.2.1"), NoAuth)
	if r := refusedFor(t, tr, netip.MustParseAddr("198.51.100.1")); r != ReasonTableFull {
		t.Fatalf("deny-all with a full table: %q", r)
	}
	if r := refusedFor(t, tr, a2); r != "" {
		t.Fatalf("exempt refused in deny-all: %s", r)
	}
	if r := refusedFor(t, tr, netip.MustParseAddr("2001:db8::1")); r != "" {
		t.Fatalf("IPv6 refused for a full IPv4 table: %s", r)
	}
}

func TestMaxStartups(t *testing.T) {
	tr, _ := newTracker(t, func(c *Config) { c.MaxStartups = 2 })
	s1, _ := tr.Admit(a1)
	s2, _ := tr.Admit(a1)
	if r := refusedFor(t, tr, a1); r != ReasonMaxStartups {
		t.Fatalf("third unauthenticated connection: %q", r)
	}
	if r := refusedFor(t, tr, a2); r != "" {
		t.Fatalf("another source: %s", r)
	}
	s1.Release()
	s1.Release() // twice is harmless
	if _, err := tr.Admit(a1); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	s2.Release()
}

func TestDisabled(t *testing.T) {
	tr, _ := newTracker(t, func(c *Config) { c.Disabled = true })
	tr.Penalize(a1, Crash)
	if r := refusedFor(t, tr, a1); r != "" {
		t.Fatalf("penalties off, refused: %s", r)
	}
}

func TestParse(t *testing.T) {
	c, err := ParsePenalties(Defaults(), strings.Fields("crash:2m authfail:1h30m noauth:0 max:1d min:3 max-sources6:10 overflow:deny-all overflow6:permissive invaliduser:1.5s"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Durations[Crash] != 2*time.Minute || c.Durations[AuthFail] != 90*time.Minute || c.Durations[NoAuth] != 0 ||
		c.Max != 24*time.Hour || c.Min != 3*time.Second || c.MaxSources6 != 10 || c.Overflow4 != DenyAll ||
		c.Overflow6 != Permissive || c.Durations[InvalidUser] != 1500*time.Millisecond {
		t.Fatalf("%+v", c)
	}
	if c, _ := ParsePenalties(Defaults(), []string{"no"}); !c.Disabled {
		t.Fatal("no")
	}
	for _, bad := range []string{"crash", "crash:", "bogus:1", "crash:1x", "max-sources4:0", "overflow:maybe", "crash:-1s"} {
		if _, err := ParsePenalties(Defaults(), []string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if b4, b6, err := ParseNetBlockSize("24:56"); err != nil || b4 != 24 || b6 != 56 {
		t.Fatalf("24:56 = %d %d %v", b4, b6, err)
	}
	for _, bad := range []string{"33", "24:129", "x", ""} {
		if _, _, err := ParseNetBlockSize(bad); err == nil {
			t.Errorf("net block %q accepted", bad)
		}
	}
	bad := Defaults()
	bad.Exempt = []string{"192.0.2.1/24"}
	if _, err := New(&bad, nil, nil); err == nil {
		t.Error("exempt prefix with host bits accepted")
	}
}

func TestClassify(t *testing.T) {
	for o, want := range map[Outcome]Kind{
		{Crashed: true}:                        Crash,
		{GraceExceeded: true, Attempted: true}: GraceExceeded,
		{InvalidUser: true, Attempted: true}:   InvalidUser,
		{Attempted: true}:                      AuthFail,
		{}:                                     NoAuth,
		{Refused: true}:                        RefuseConnection,
	} {
		if k, ok := Classify(o); !ok || k != want {
			t.Errorf("%+v: %v, want %v", o, k, want)
		}
	}
	if _, ok := Classify(Outcome{Authenticated: true}); ok {
		t.Error("a login penalised")
	}
	line := DropLine(3, netip.MustParseAddrPort("127.0.0.2:4000"), netip.MustParseAddrPort("127.0.0.1:22"), "penalty: failed authentication")
	if line != "drop connection #3 from [127.0.0.2]:4000 on [127.0.0.1]:22 penalty: failed authentication" {
		t.Fatal(line)
	}
}

func TestConcurrent(t *testing.T) {
	tr, _ := newTracker(t, func(c *Config) { c.MaxStartups = 1000 })
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			a := netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})
			for j := 0; j < 200; j++ {
				s, _ := tr.Admit(a)
				tr.Penalize(a, NoAuth)
				s.Release()
				tr.Penalties()
			}
		}(i)
	}
	wg.Wait()
}

func FuzzParse(f *testing.F) {
	f.Add("crash:2m authfail:5 overflow:deny-all", "24:64", "192.0.2.0/24")
	f.Fuzz(func(t *testing.T, pen, block, ex string) {
		ParsePenalties(Defaults(), strings.Fields(pen))
		ParseNetBlockSize(block)
		parseExempt(ex)
		if d, err := ParseDuration(pen); err == nil && d < 0 {
			t.Fatalf("negative duration %v from %q", d, pen)
		}
	})
}

// TestClassifyAfterAuthentication: only pre-auth outcomes are penalised:
// an authenticated connection whose process crashed is not (OpenSSH
// never penalises after authentication), nor a connection lost with a
// worker that something else crashed.
func TestClassifyAfterAuthentication(t *testing.T) {
	for _, tc := range []struct {
		o    Outcome
		k    Kind
		want bool
	}{
		{Outcome{Authenticated: true, Crashed: true}, 0, false},
		{Outcome{Authenticated: true}, 0, false},
		{Outcome{Lost: true, Attempted: true}, 0, false},
		{Outcome{Crashed: true, Attempted: true}, Crash, true},
		{Outcome{GraceExceeded: true}, GraceExceeded, true},
		{Outcome{}, NoAuth, true},
	} {
		k, ok := Classify(tc.o)
		if ok != tc.want || (ok && k != tc.k) {
			t.Errorf("Classify(%+v) = %v %v, want %v %v", tc.o, k, ok, tc.k, tc.want)
		}
	}
}
