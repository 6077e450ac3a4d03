//go:build cgo && !nopkcs11

package pkcs11

import (
	"context"
	"errors"
	"fmt"
	"github.com/offload/offload/providers/pkcs11/uri"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/pkcs11"
)

// session is an open PKCS #11 session and the module generation it was
// opened in: a session from an earlier generation is never used, because
// after a reinitialization its handle may name somebody else's session.
type session struct {
	h   pkcs11.SessionHandle
	gen uint64
}

// token is one token in use: where it is, how to log in, its bounded
// session pool, what it offers and whether it is up.
type token struct {
	p   *core
	sel *uri.URI // the selector it was chosen by (with its query attributes)

	mu      sync.Mutex
	pin     string
	pinSrc  pinSource // where pin came from, for the PIN guard
	slot    uint
	desc    uri.TokenInfo
	idle    []session
	down    error // non-nil while the token is unavailable
	pinKO   error // sticky: the PIN was refused, never sent again
	pending bool  // configured, never attached (Config.AllowMissing)
	epoch   uint64

	sem  chan struct{} // one entry per session in use; nil until attached
	held atomic.Int32  // sessions of sem held for life by AEADs
	wait time.Duration

	waits, timeouts atomic.Uint64 // pool waits and the ones that gave up
	waitNS          atomic.Int64  // total time waited for a session

	caps atomic.Pointer[tokenCaps] // what the token offers, read at attach

	failover     *token   // holds the same keys; signs when this token is lost
	peers        []*token // hold the same keys and sign too (active-active)
	firmware     string
	recoverMu    sync.Mutex
	reinitAfter  time.Time     // guarded by recoverMu: no module reinitialization before
	reinitWait   time.Duration // guarded by recoverMu: grows while the token stays away
	notReady     bool          // guarded by recoverMu: a pending token was seen but did not attach
	recoveries   atomic.Uint64
	lastProbeErr atomic.Pointer[error]
}

// Retry policy for faults that recovery may cure.
const (
	maxAttempts  = 4
	firstBackoff = 20 * time.Millisecond
	maxBackoff   = 500 * time.Millisecond
)

func (t *token) label() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.desc.Label
}

func (t *token) state() (slot uint, epoch uint64, desc uri.TokenInfo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.slot, t.epoch, t.desc
}

// inUse is the number of sessions handed out and not yet returned.
func (t *token) inUse() int { return len(t.sem) }

// usable returns why the token cannot be used now, or nil.
func (t *token) usable() error {
	if t.p.closed() {
		return closedErr("use token", "")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pinKO != nil {
		return t.pinKO
	}
	return t.down
}

// get takes a session from the pool, opening one when none is idle and the
// pool has room. It waits up to the wait timeout for room; with block
// false it does not wait at all.
func (t *token) get(ctx context.Context, block bool) (session, error) {
	if err := ctx.Err(); err != nil {
		return session{}, ctxErr(ctx, "get session", t.label(), "")
	}
	select {
	case t.sem <- struct{}{}:
	default:
		if !block {
			return session{}, &Error{Op: "get session", Token: t.label(), Class: ClassBusy,
				Err: fmt.Errorf("%w: all %d sessions busy", ErrPoolExhausted, cap(t.sem))}
		}
		if err := t.waitSession(ctx); err != nil {
			return session{}, err
		}
	}
	gen := t.p.mod.gen.Load()
	t.mu.Lock()
	for n := len(t.idle); n > 0; n = len(t.idle) {
		s := t.idle[n-1]
		t.idle = t.idle[:n-1]
		if s.gen == gen {
			t.mu.Unlock()
			return s, nil
		}
		// Stale: its handle died with the old generation; never close it.
	}
	t.mu.Unlock()
	s, err := t.open()
	if err != nil {
		<-t.sem
		return session{}, err
	}
	return s, nil
}

// waitSession waits for room in the pool, up to the wait timeout, the
// context or Close.
func (t *token) waitSession(ctx context.Context) error {
	t.waits.Add(1)
	start := time.Now()
	defer func() { t.waitNS.Add(int64(time.Since(start))) }()
	timer := time.NewTimer(t.wait)
	defer timer.Stop()
	select {
	case t.sem <- struct{}{}:
		return nil
	case <-timer.C:
		t.timeouts.Add(1)
		return &Error{Op: "get session", Token: t.label(), Class: ClassBusy,
			Err: fmt.Errorf("%w: all %d sessions stayed busy for %v", ErrPoolExhausted, cap(t.sem), t.wait)}
	case <-ctx.Done():
		t.timeouts.Add(1)
		return ctxErr(ctx, "get session", t.label(), "")
	case <-t.p.stop:
		return closedErr("get session", "")
	}
}

// getHeld takes a session for an AEAD to hold for its life, without
// waiting. In a pool of two or more it leaves one session to the short
// operations, so that AEADs held by established connections never make a
// host-key signature wait out WaitTimeout and fail. Every session it
// returns is given back with unhold and then put, discard or a bare
// release of its place (stale sessions).
//
// spare sessions more are left free: an AEAD's extra lanes (Config.
// AEADLanes) leave room for the first session of other connections' AEADs.
func (t *token) getHeld(spare int) (session, error) {
	if n := cap(t.sem); n > 1 && int(t.held.Add(1)) > n-1-spare {
		t.held.Add(-1)
		why := "the last is kept for signatures"
		if spare > 0 {
			why = fmt.Sprintf("an extra lane leaves %d more for other connections", spare)
		}
		return session{}, &Error{Op: "get session", Token: t.label(), Class: ClassBusy,
			Err: fmt.Errorf("%w: %d of %d sessions held by AEADs, %s", ErrPoolExhausted, t.held.Load(), n, why)}
	}
	s, err := t.get(context.Background(), false)
	if err != nil {
		t.unhold()
	}
	return s, err
}

// unhold ends a getHeld session's life as an AEAD's.
func (t *token) unhold() {
	if cap(t.sem) > 1 {
		t.held.Add(-1)
	}
}

// put returns a healthy session to the pool.
func (t *token) put(s session) {
	t.mu.Lock()
	t.idle = append(t.idle, s)
	t.mu.Unlock()
	<-t.sem
}

// discard closes a broken session and frees its place in the pool.
func (t *token) discard(s session) {
	t.p.mod.mu.RLock()
	if s.gen == t.p.mod.gen.Load() {
		_ = t.p.api.CloseSession(s.h)
	}
	t.p.mod.mu.RUnlock()
	<-t.sem
}

// open opens a session and makes sure the token is logged in. The login
// happens once: PKCS #11 logs in every session of the application.
func (t *token) open() (session, error) {
	if err := t.usable(); err != nil {
		return session{}, err
	}
	return t.openSession()
}

// openSession opens a session and logs in, whether the token is up or
// not (open checks that).
func (t *token) openSession() (session, error) {
	m := t.p.mod
	m.mu.RLock()
	defer m.mu.RUnlock()
	if t.p.closed() {
		return session{}, closedErr("open session", "")
	}
	slot, _, desc := t.state()
	gen := m.gen.Load()
	h, err := t.p.api.OpenSession(slot, pkcs11.CKF_SERIAL_SESSION|pkcs11.CKF_RW_SESSION)
	if err != nil {
		return session{}, wrapErr(err, "open session", desc.Label, "")
	}
	if err := t.ensureLogin(h); err != nil {
		_ = t.p.api.CloseSession(h)
		return session{}, err
	}
	return session{h: h, gen: gen}, nil
}

// ensureLogin logs the session's application in unless it already is.
// A refused PIN is remembered and never sent again.
func (t *token) ensureLogin(h pkcs11.SessionHandle) error {
	t.mu.Lock()
	pin, ko := t.pin, t.pinKO
	t.mu.Unlock()
	if pin == "" {
		return nil
	}
	if ko != nil {
		return ko
	}
	if info, err := t.p.api.GetSessionInfo(h); err == nil &&
		(info.State == pkcs11.CKS_RO_USER_FUNCTIONS || info.State == pkcs11.CKS_RW_USER_FUNCTIONS) {
		return nil
	}
	err := t.p.api.Login(h, pkcs11.CKU_USER, pin)
	var pe pkcs11.Error
	if errors.As(err, &pe) && pe == pkcs11.CKR_USER_ALREADY_LOGGED_IN {
		return nil
	}
	if err == nil {
		t.p.mod.loggedIn(t, pin)
		return nil
	}
	err = wrapErr(err, "log in", t.label(), "")
	if ClassOf(err) == ClassPIN {
		t.mu.Lock()
		t.pinKO = err
		t.mu.Unlock()
		where := t.p.guard.record(t, err)
		t.p.log.Error("token refused the PIN; it will not be sent again", "token", t.label(), "err", err, "recorded", where)
	}
	return err
}

// do runs f with a pooled session, recovering from faults: a dead session
// is replaced, a lost login redone, a lost token reattached (rescanning
// the module, reinitializing it if need be) with backoff. Errors that
// recovery cannot cure are returned at once.
func (t *token) do(ctx context.Context, op, what string, f func(h pkcs11.SessionHandle) error) error {
	backoff := firstBackoff
	var last error
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return errors.Join(last, ctxErr(ctx, op, t.label(), what))
		}
		if err := t.usable(); err != nil {
			// A token marked down gets one recovery attempt per call, so a
			// token that came back is used again without waiting for the probe.
			c := ClassOf(err)
			if c == ClassPIN || c == ClassClosed || t.isPending() || t.recover(t.p.mod.gen.Load(), err) != nil {
				return t.annotate(err, op, what)
			}
		}
		gen := t.p.mod.gen.Load()
		s, err := t.get(ctx, true)
		if err != nil {
			if errors.Is(err, ErrPoolExhausted) || ctx.Err() != nil || ClassOf(err) == ClassClosed {
				return err // the wait already happened
			}
			last = err
			if ClassOf(err) == ClassDevice && t.recover(gen, err) != nil {
				t.p.log.Warn("token lost", "token", t.label(), "op", op, "err", err)
			}
		} else {
			m := t.p.mod
			m.mu.RLock()
			if s.gen != m.gen.Load() {
				m.mu.RUnlock()
				<-t.sem // stale session: drop without closing
				continue
			}
			err = f(s.h)
			m.mu.RUnlock()
			if err == nil {
				t.put(s)
				return nil
			}
			err = wrapErr(err, op, t.label(), what)
			last = err
			switch ClassOf(err) {
			case ClassSession:
				t.discard(s)
			case ClassLogin:
				m.mu.RLock()
				lerr := t.ensureLogin(s.h)
				m.mu.RUnlock()
				t.put(s)
				if lerr != nil {
					return lerr
				}
			case ClassDevice:
				t.discard(s)
				if rerr := t.recover(s.gen, err); rerr != nil {
					t.p.log.Warn("token lost", "token", t.label(), "op", op, "err", err)
				}
			case ClassBusy, ClassHandle:
				t.put(s)
			default:
				t.put(s)
				return err
			}
		}
		if !ClassOf(last).Retryable() || attempt >= maxAttempts {
			return last
		}
		if ClassOf(last) != ClassSession && ClassOf(last) != ClassLogin && ClassOf(last) != ClassHandle {
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return errors.Join(last, ctxErr(ctx, op, t.label(), what))
			case <-t.p.stop:
				return closedErr(op, what)
			}
			backoff = min(2*backoff, maxBackoff)
		}
	}
}

// annotate adds the operation to an availability error.
func (t *token) annotate(err error, op, what string) error {
	var e *Error
	if errors.As(err, &e) && (e.Op == op || e.Class == ClassClosed) {
		if e.Class == ClassClosed && e.Op != op {
			return closedErr(op, what)
		}
		return err
	}
	class := ClassOf(err)
	if class == ClassOther {
		class = ClassDevice
	}
	return &Error{Op: op, Token: t.label(), What: what, Class: class, Err: err}
}

// recover brings a lost token back: a probe of its slot, then a rescan of
// the module's slots for a token the selector and label match, then a
// reinitialization of the module and another rescan. seenGen is the module
// generation the failure happened in. On failure the token is marked down.
func (t *token) recover(seenGen uint64, cause error) error {
	t.recoverMu.Lock()
	defer t.recoverMu.Unlock()
	if t.usable() == nil && t.probe() == nil {
		return nil
	}
	if err := t.rescan(); err == nil {
		t.reinitWait = 0
		return nil
	}
	// Reinitializing disturbs every token of the module: do it at growing
	// intervals (1 s doubling to 30 s) while this token stays away.
	if t.p.mod.ownsInit && !time.Now().Before(t.reinitAfter) {
		t.reinitWait = min(max(2*t.reinitWait, time.Second), 30*time.Second)
		t.reinitAfter = time.Now().Add(t.reinitWait)
		if err := t.p.mod.reinitialize(seenGen); err != nil {
			t.p.log.Warn("module reinitialization failed", "module", t.p.mod.path, "err", err)
		}
		if err := t.rescan(); err == nil {
			t.reinitWait, t.reinitAfter = 0, time.Time{}
			return nil
		}
	}
	t.mu.Lock()
	if t.down == nil {
		t.down = &Error{Op: "reach token", Token: t.desc.Label, Class: ClassDevice,
			Err: fmt.Errorf("%w: %w", ErrTokenUnavailable, trimPrefix(cause))}
	}
	err := t.down
	t.mu.Unlock()
	return err
}

// probe asks the token's slot for its token information.
func (t *token) probe() error {
	m := t.p.mod
	m.mu.RLock()
	defer m.mu.RUnlock()
	slot, _, desc := t.state()
	info, err := t.p.api.GetTokenInfo(slot)
	if err != nil {
		return wrapErr(err, "probe", desc.Label, "")
	}
	if info.Label != desc.Label || info.SerialNumber != desc.Serial {
		return &Error{Op: "probe", Token: desc.Label, Class: ClassDevice,
			Err: fmt.Errorf("slot %d now holds token %q (serial %s)", slot, info.Label, info.SerialNumber)}
	}
	return nil
}

// rescan looks for the token among the module's slots again: the same
// selector and the same label (a token created again has a new serial).
// Found, the token gets a new epoch: cached object handles are dropped and
// keys found again (and checked to be the same keys).
func (t *token) rescan() error {
	m := t.p.mod
	m.mu.RLock()
	descs, err := listTokens(t.p.api, m.libraryDesc)
	m.mu.RUnlock()
	if err != nil {
		return err
	}
	_, _, old := t.state()
	var found *uri.TokenInfo
	for i := range descs {
		d := &descs[i]
		if !t.sel.MatchesToken(*d) || d.Label != old.Label {
			continue
		}
		if found == nil || d.Serial == old.Serial {
			found = d
		}
	}
	if found == nil {
		return &Error{Op: "rescan", Token: old.Label, Class: ClassDevice, Err: errors.New("not among the module's tokens")}
	}
	if err := t.setUp(found); err != nil {
		return err
	}
	t.mu.Lock()
	stale := t.idle
	t.idle = nil
	t.slot, t.desc = found.SlotID, *found
	t.epoch++
	t.mu.Unlock()
	m.mu.RLock()
	for _, s := range stale {
		if s.gen == m.gen.Load() {
			_ = t.p.api.CloseSession(s.h)
		}
	}
	m.mu.RUnlock()
	if err := t.canLogIn(); err != nil {
		return err
	}
	t.mu.Lock()
	t.down = nil
	t.mu.Unlock()
	t.recoveries.Add(1)
	t.p.log.Info("token reattached", "token", found.Label, "serial", found.Serial, "slot", found.SlotID)
	return nil
}

// canLogIn opens a session on a token found again and logs in, keeping
// the session in the pool: the token is back (up) when it can be used,
// not when it is listed, and stays down until then. A module may list a
// token, its user PIN set, and still refuse the login until it loads the
// token again (SoftHSM, for a token another process set up).
func (t *token) canLogIn() error {
	s, err := t.openSession()
	if err == nil {
		t.mu.Lock()
		t.idle = append(t.idle, s)
		t.mu.Unlock()
		return nil
	}
	e := &Error{Op: "rescan", Token: t.label(), Class: ClassDevice, Err: fmt.Errorf("found again, but: %w", trimPrefix(err))}
	t.mu.Lock()
	t.down = e
	t.mu.Unlock()
	t.p.log.Debug("token found again but not usable yet", "token", t.label(), "err", err)
	return e
}

// setUp refuses a token that is back but still being set up: made again
// (C_InitToken) without its user PIN yet (C_InitPIN), as softhsm2-util
// and pkcs11-tool do in two steps. Such a token is listed but cannot be
// logged in to, so it stays down until its PIN is set.
func (t *token) setUp(d *uri.TokenInfo) error {
	m := t.p.mod
	m.mu.RLock()
	info, err := t.p.api.GetTokenInfo(d.SlotID)
	m.mu.RUnlock()
	if err != nil {
		return wrapErr(err, "rescan", d.Label, "")
	}
	if info.Flags&pkcs11.CKF_USER_PIN_INITIALIZED == 0 {
		t.p.log.Debug("token listed but being set up: its user PIN is not initialized yet", "token", d.Label, "serial", d.Serial)
		return &Error{Op: "rescan", Token: d.Label, Class: ClassDevice,
			Err: fmt.Errorf("back (serial %s), but being set up: its user PIN is not initialized yet", d.Serial)}
	}
	return nil
}

// probeLoop watches the token until stop is closed: a failed probe starts
// recovery, and a token that is down is retried every interval.
func (t *token) probeLoop(stop <-chan struct{}, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if !t.p.gate.enter() {
			return
		}
		t.probeOnce()
		t.p.gate.exit()
	}
}

// probeOnce checks the token once: a pending token is looked for, a
// failed probe starts recovery. A refused PIN stops both.
func (t *token) probeOnce() {
	if err := t.usable(); err != nil && ClassOf(err) == ClassPIN {
		return
	}
	if t.isPending() {
		ctx, cancel := t.p.deadline(context.Background())
		defer cancel()
		if err := t.tryAttach(ctx); err != nil && !errors.Is(err, ErrNotFound) {
			t.p.log.Debug("pending token not attached", "token", t.sel.String(), "err", err)
		}
		return
	}
	err := t.probe()
	if err == nil && t.usable() == nil {
		t.lastProbeErr.Store(nil)
		return
	}
	if err == nil {
		err = t.usable()
	}
	t.lastProbeErr.Store(&err)
	if rerr := t.recover(t.p.mod.gen.Load(), err); rerr != nil {
		t.p.log.Debug("token still unavailable", "token", t.label(), "err", rerr)
	} else {
		t.p.log.Info("token available again", "token", t.label())
	}
}

// listTokens describes every slot with an initialized token.
func listTokens(a api, lib uri.TokenInfo) ([]uri.TokenInfo, error) {
	slots, err := a.GetSlotList(true)
	if err != nil {
		return nil, wrapErr(err, "list slots", "", "")
	}
	var out []uri.TokenInfo
	for _, id := range slots {
		ti, err := a.GetTokenInfo(id)
		if err != nil || ti.Flags&pkcs11.CKF_TOKEN_INITIALIZED == 0 {
			continue
		}
		d := lib
		d.SlotID = id
		if si, err := a.GetSlotInfo(id); err == nil {
			d.SlotDescription, d.SlotManufacturer = si.SlotDescription, si.ManufacturerID
		}
		d.Label, d.Manufacturer, d.Model, d.Serial = ti.Label, ti.ManufacturerID, ti.Model, ti.SerialNumber
		d.Firmware = fmt.Sprintf("%d.%d", ti.FirmwareVersion.Major, ti.FirmwareVersion.Minor)
		out = append(out, d)
	}
	return out, nil
}

func (t *token) health() TokenHealth {
	t.mu.Lock()
	h := TokenHealth{Token: t.desc, Up: t.down == nil && t.pinKO == nil, Pending: t.pending, Idle: len(t.idle)}
	if t.pinKO != nil {
		h.Error = t.pinKO.Error()
	} else if t.down != nil {
		h.Error = t.down.Error()
	}
	t.mu.Unlock()
	h.InUse, h.Max, h.Recoveries = t.inUse(), cap(t.sem), t.recoveries.Load()
	return h
}
