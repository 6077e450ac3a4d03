package penalty

import (
	"container/heap"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/offload/offload/sshd/match"
)

// Refused is a connection the Tracker does not admit.
type Refused struct {
	Reason string // OpenSSH's words: "penalty: failed authentication", ...
}

func (r *Refused) Error() string { return "penalty: connection refused: " + r.Reason }

// Reasons for refusals that are not a source's own penalty.
const (
	ReasonTableFull   = "too many penalised addresses"
	ReasonMaxStartups = "PerSourceMaxStartups"
)

// Tracker holds the penalties and the unauthenticated connections per
// source network. The listener asks Admit on every accepted connection;
// whoever learns how a connection ended (the monitor) calls Penalize.
// It is safe for concurrent use.
type Tracker struct {
	cfg    Config
	exempt []exempt
	log    *slog.Logger
	now    func() time.Time

	mu       sync.Mutex
	fam      [2]*table            // IPv4, IPv6
	startups map[netip.Prefix]int // unauthenticated connections per network
}

// table is the penalties of one address family.
type table struct {
	byNet map[netip.Prefix]*entry
	heap  expiryHeap
	max   int
	mode  Overflow
	name  string
}

type entry struct {
	net    netip.Prefix
	expiry time.Time
	active bool
	reason string
	index  int // in the heap
}

// Config returns the configuration the tracker applies.
func (t *Tracker) Config() Config { return t.cfg }

// New returns a Tracker for cfg (nil means Defaults()). logger receives
// OpenSSH's VERBOSE lines about penalties at Debug (nil: slog.Default());
// now is the clock (nil: time.Now).
func New(cfg *Config, logger *slog.Logger, now func() time.Time) (*Tracker, error) {
	c := Defaults()
	if cfg != nil {
		c = *cfg
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	t := &Tracker{cfg: c, log: logger, now: now, startups: map[netip.Prefix]int{}}
	for _, e := range c.Exempt {
		x, _ := parseExempt(e)
		t.exempt = append(t.exempt, x)
	}
	t.fam[0] = &table{byNet: map[netip.Prefix]*entry{}, max: c.MaxSources4, mode: c.Overflow4, name: "ipv4"}
	t.fam[1] = &table{byNet: map[netip.Prefix]*entry{}, max: c.MaxSources6, mode: c.Overflow6, name: "ipv6"}
	if t.log == nil {
		t.log = slog.Default()
	}
	if t.now == nil {
		t.now = time.Now
	}
	return t, nil
}

// network is addr's source network (PerSourceNetBlockSize).
func (t *Tracker) network(addr netip.Addr) (netip.Prefix, *table) {
	addr = addr.Unmap()
	if addr.Is4() {
		p, _ := addr.Prefix(t.cfg.Bits4)
		return p, t.fam[0]
	}
	p, _ := addr.Prefix(t.cfg.Bits6)
	return p, t.fam[1]
}

func (t *Tracker) isExempt(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, e := range t.exempt {
		if (e.prefix.IsValid() && e.prefix.Contains(addr)) || (e.pattern != "" && match.Glob(addr.String(), e.pattern)) {
			return true
		}
	}
	return false
}

// Slot is an admitted connection's place among its network's
// unauthenticated connections; Release it when the connection has
// authenticated or ended. Release may be called more than once.
type Slot struct {
	t    *Tracker
	net  netip.Prefix
	once sync.Once
}

// Release frees the slot.
func (s *Slot) Release() {
	if s == nil || s.t == nil {
		return
	}
	s.once.Do(func() {
		s.t.mu.Lock()
		defer s.t.mu.Unlock()
		if s.t.startups[s.net]--; s.t.startups[s.net] <= 0 {
			delete(s.t.startups, s.net)
		}
	})
}

// Admit decides whether a connection from addr may start: not while its
// network has an active penalty (or, in deny-all overflow, while the
// table is full), and not beyond PerSourceMaxStartups. The error is a
// *Refused.
func (t *Tracker) Admit(addr netip.Addr) (*Slot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.penaltyAllows(addr); err != nil {
		return nil, err
	}
	net, _ := t.network(addr)
	if t.cfg.MaxStartups > 0 {
		if t.startups[net] >= t.cfg.MaxStartups {
			return nil, &Refused{Reason: ReasonMaxStartups}
		}
		t.startups[net]++
		return &Slot{t: t, net: net}, nil
	}
	return &Slot{}, nil
}

func (t *Tracker) penaltyAllows(addr netip.Addr) error {
	if t.cfg.Disabled || !addr.IsValid() || t.isExempt(addr) {
		return nil
	}
	now := t.now()
	net, tab := t.network(addr)
	tab.expire(now)
	if len(tab.byNet) >= tab.max && tab.mode == DenyAll {
		return &Refused{Reason: ReasonTableFull}
	}
	if e := tab.byNet[net]; e != nil && e.active {
		return &Refused{Reason: e.reason}
	}
	return nil
}

// Penalize records that a connection from addr ended by k. Penalties of
// one network accumulate up to Max and refuse it once more than Min is
// outstanding.
func (t *Tracker) Penalize(addr netip.Addr, k Kind) {
	if t.cfg.Disabled || !addr.IsValid() || k < 0 || k >= numKinds || t.isExempt(addr) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	net, tab := t.network(addr)
	tab.expire(now)
	d, reason := t.cfg.Durations[k], kinds[k].reason
	if e := tab.byNet[net]; e != nil {
		t.extend(tab, e, now, d, reason)
		return
	}
	if len(tab.byNet) >= tab.max && tab.mode == DenyAll {
		t.log.Debug(fmt.Sprintf("%s penalty table full, cannot penalise %s for %s", tab.name, net, reason))
		return
	}
	e := &entry{net: net, expiry: now.Add(d), active: d > t.cfg.Min, reason: reason}
	tab.byNet[net] = e
	heap.Push(&tab.heap, e)
	t.log.Debug(fmt.Sprintf("%s: new %s %s penalty of %.3f seconds for %s", tab.name, net, activeWord(e.active), d.Seconds(), reason))
	for len(tab.byNet) > tab.max { // permissive: drop the soonest to expire
		old := heap.Pop(&tab.heap).(*entry)
		delete(tab.byNet, old.net)
		t.log.Debug(fmt.Sprintf("%s overflow, remove %s", tab.name, old.net))
	}
}

func (t *Tracker) extend(tab *table, e *entry, now time.Time, d time.Duration, reason string) {
	e.expiry = e.expiry.Add(d)
	if e.expiry.Sub(now) > t.cfg.Max {
		e.expiry = now.Add(t.cfg.Max)
	}
	if !e.active && e.expiry.Sub(now) > t.cfg.Min {
		e.active = true
		t.log.Info(fmt.Sprintf("%s: activating %s penalty of %.3f seconds for %s", e.net, tab.name, e.expiry.Sub(now).Seconds(), reason))
	}
	e.reason = reason
	heap.Fix(&tab.heap, e.index)
}

func activeWord(active bool) string {
	if active {
		return "active"
	}
	return "deferred"
}

// expire drops the penalties that have run out.
func (tab *table) expire(now time.Time) {
	for len(tab.heap) > 0 && tab.heap[0].expiry.Before(now) {
		e := heap.Pop(&tab.heap).(*entry)
		delete(tab.byNet, e.net)
	}
}

// Entry is a penalty in force, for status reports.
type Entry struct {
	Network netip.Prefix
	Left    time.Duration
	Active  bool
	Reason  string
}

// Penalties lists the penalties in force, soonest to expire first within
// each family (IPv4 first).
func (t *Tracker) Penalties() []Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var out []Entry
	for _, tab := range t.fam {
		tab.expire(now)
		h := append(expiryHeap(nil), tab.heap...)
		for len(h) > 0 {
			e := heap.Pop(&h).(*entry)
			out = append(out, Entry{e.net, e.expiry.Sub(now), e.active, e.reason})
		}
		for i, e := range tab.heap { // Pop on the copy moved the indexes
			e.index = i
		}
	}
	return out
}

// expiryHeap orders entries by expiry.
type expiryHeap []*entry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expiry.Before(h[j].expiry) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *expiryHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// Outcome is how a connection ended, as the monitor knows it.
type Outcome struct {
	Authenticated bool // a login succeeded
	Crashed       bool // its pre-auth process died, and this connection is held the cause
	// Lost: its pre-auth process died and nothing shows this connection
	// caused it (another connection of the worker did, or the worker was
	// killed): no penalty, as for the other clients of a crashed OpenSSH
	// child, which have children of their own.
	Lost          bool
	GraceExceeded bool // LoginGraceTime passed
	Refused       bool // RefuseConnection
	InvalidUser   bool // authentication was attempted for an invalid user
	Attempted     bool // at least one authentication attempt failed
}

// Classify names the penalty for an ended connection, in the order
// OpenSSH's listener applies them; ok is false when none is due.
// An authenticated connection is never penalised, however it ended (a
// post-auth process that crashed is the user's own), as in OpenSSH.
func Classify(o Outcome) (k Kind, ok bool) {
	switch {
	case o.Authenticated, o.Lost:
		return 0, false
	case o.Crashed:
		return Crash, true
	case o.GraceExceeded:
		return GraceExceeded, true
	case o.Refused:
		return RefuseConnection, true
	case o.InvalidUser:
		return InvalidUser, true
	case o.Attempted:
		return AuthFail, true
	}
	return NoAuth, true
}

// DropLine is OpenSSH's log line for a refused connection: "drop
// connection #N from [A]:P on [L]:Q <reason>".
func DropLine(n int, remote, local netip.AddrPort, reason string) string {
	return fmt.Sprintf("drop connection #%d from [%s]:%d on [%s]:%d %s", n, remote.Addr(), remote.Port(), local.Addr(), local.Port(), reason)
}

// RefusalText is what OpenSSH writes to a refused client before closing.
const RefusalText = "Not allowed at this time\r\n"
