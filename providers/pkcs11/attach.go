//go:build cgo && !nopkcs11

package pkcs11

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/miekg/pkcs11"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// Open loads the module, finds the tokens cfg selects (before any login),
// logs in to each once and reads what each offers. A wrong PIN fails Open
// and is not tried again. With Config.AllowMissing, tokens that are not
// present or cannot be attached stay pending instead of failing Open.
func Open(cfg Config) (*Provider, error) { return OpenContext(context.Background(), cfg) }

// OpenContext is Open with a context bounding the waits of the logins.
func OpenContext(ctx context.Context, cfg Config) (*Provider, error) {
	sels, err := parseSelectors(cfg.Tokens)
	if err != nil {
		return nil, err
	}
	modName := cfg.ModulePath
	for _, s := range sels {
		if modName == "" {
			modName = s.Module()
		}
	}
	if modName == "" {
		return nil, errors.New("pkcs11: no module given (Config.ModulePath, or module-path/module-name in a token URI)")
	}
	path, err := ResolveModule(modName)
	if err != nil {
		return nil, err
	}
	for _, s := range sels {
		if m := s.Module(); m != "" && !sameModule(m, path) {
			return nil, fmt.Errorf("pkcs11: token URI %s names module %s, but this provider loads %s", s, m, path)
		}
	}
	mod, fresh, err := openModule(path)
	if err != nil {
		return nil, err
	}
	c := &core{cfg: cfg, mod: mod, api: mod.ctx, log: cfg.logger(), stop: make(chan struct{}), freshModule: fresh,
		gate: newGate(), guard: newPINGuard(cfg.StateDir)}
	if cfg.Faults != nil {
		c.api = cfg.Faults.Wrap(c.api)
	}
	if cfg.testHooks != nil && cfg.testHooks.wrap != nil {
		c.api = cfg.testHooks.wrap(c.api)
	}
	if err := c.attach(ctx, sels); err != nil {
		c.close()
		return nil, err
	}
	c.root = c.view(cfg.name(), c.tokens, true)
	every := cfg.HealthInterval
	if every == 0 {
		every = DefaultHealthInterval
	}
	if every > 0 {
		for _, t := range c.tokens {
			c.wg.Add(1)
			go func() { defer c.wg.Done(); t.probeLoop(c.stop, every) }()
		}
	}
	return c.root, nil
}

// OpenURI opens a provider for the one token a URI names, with the URI's
// module and PIN attributes; opts may set anything else (its Tokens are
// replaced).
func OpenURI(s string, opts Config) (*Provider, error) {
	u, err := uri.Parse(s)
	if err != nil {
		return nil, err
	}
	opts.Tokens = []*uri.URI{u.TokenOnly()}
	return Open(opts)
}

func parseSelectors(uris []*uri.URI) ([]*uri.URI, error) {
	if len(uris) == 0 {
		return []*uri.URI{{}}, nil
	}
	out := make([]*uri.URI, 0, len(uris))
	for _, u := range uris {
		if u == nil {
			return nil, errors.New("pkcs11: nil token URI in Config.Tokens")
		}
		if u.HasObject() {
			return nil, fmt.Errorf("pkcs11: token URI %s names an object; a provider is configured with tokens only", u)
		}
		out = append(out, u)
	}
	return out, nil
}

func sameModule(name, path string) bool {
	if p, err := ResolveModule(name); err == nil {
		a, errA := filepath.EvalSymlinks(p)
		b, errB := filepath.EvalSymlinks(path)
		return errA == nil && errB == nil && a == b
	}
	return false
}

// attach chooses the tokens, logs in and reads mechanisms. With
// AllowMissing a selector that matches nothing, or a token that fails to
// attach, becomes a pending token.
func (c *core) attach(ctx context.Context, sels []*uri.URI) error {
	descs, err := c.scan(sels)
	if err != nil {
		return err
	}
	chosen := map[uint]bool{}
	for _, sel := range sels {
		n := 0
		for _, d := range descs {
			if !sel.MatchesToken(d) {
				continue
			}
			n++
			if chosen[d.SlotID] {
				continue
			}
			chosen[d.SlotID] = true
			t := c.newToken(sel)
			if err := t.attachTo(ctx, d); err != nil {
				if !c.cfg.AllowMissing {
					return err
				}
				t.setPending(err)
				c.log.Warn("token not attached; the provider starts without it", "token", d.Label, "err", err)
			}
			c.tokens = append(c.tokens, t)
		}
		if n > 0 {
			continue
		}
		err := &Error{Op: "find token", What: sel.String(), Class: ClassNotFound,
			Err: fmt.Errorf("%w: no token matches (present: %s)", ErrNotFound, describeAll(descs))}
		if !c.cfg.AllowMissing {
			return err
		}
		t := c.newToken(sel)
		t.setPending(nil)
		c.log.Warn("token not present; the provider starts without it and attaches it when it appears", "token", sel.String())
		c.tokens = append(c.tokens, t)
	}
	return c.linkFailover()
}

func (c *core) linkFailover() error {
	byLabel := map[string]*token{}
	for _, t := range c.tokens {
		byLabel[t.desc.Label] = t
	}
	for _, t := range c.tokens {
		fo := c.cfg.Failover[t.desc.Label]
		if t.sel.FailoverToken != "" {
			fo = t.sel.FailoverToken
		}
		if fo == "" {
			continue
		}
		if t.failover = byLabel[fo]; t.failover == nil || t.failover == t {
			return fmt.Errorf("pkcs11: failover token %q of token %q is not among the provider's tokens", fo, t.desc.Label)
		}
	}
	return c.linkPeers(byLabel)
}

// linkPeers groups the tokens that hold the same keys and share the
// signing (Config.Peers, the URIs' peer-token): a token named a peer of
// another is in its group, and so are that one's peers. Each token's
// peers are the other members of its group, in the provider's order.
func (c *core) linkPeers(byLabel map[string]*token) error {
	group := map[*token]*token{} // union-find parent
	var find func(t *token) *token
	find = func(t *token) *token {
		if p, ok := group[t]; ok && p != t {
			r := find(p)
			group[t] = r
			return r
		}
		return t
	}
	for _, t := range c.tokens {
		names := append(append([]string(nil), c.cfg.Peers[t.desc.Label]...), t.sel.PeerTokens...)
		for _, name := range names {
			o := byLabel[name]
			if o == nil || o == t {
				return fmt.Errorf("pkcs11: peer token %q of token %q is not among the provider's other tokens", name, t.desc.Label)
			}
			group[find(o)] = find(t)
		}
	}
	for _, t := range c.tokens {
		t.peers = nil
		for _, o := range c.tokens {
			if o != t && find(o) == find(t) {
				t.peers = append(t.peers, o)
			}
		}
	}
	return nil
}

// scan lists the module's tokens. When a selector matches none and the
// module was initialized before (by another provider in this process), it
// reinitializes the module once and lists again: SoftHSM and some HSMs
// show tokens created after C_Initialize only to a new C_Initialize.
func (c *core) scan(sels []*uri.URI) ([]uri.TokenInfo, error) {
	c.mod.mu.RLock()
	gen := c.mod.gen.Load()
	descs, err := listTokens(c.api, c.mod.libraryDesc)
	c.mod.mu.RUnlock()
	if err != nil || !c.mod.ownsInit || c.freshModule {
		return descs, err
	}
	for _, sel := range sels {
		if len(matchingDescs(sel, descs)) == 0 {
			c.log.Info("token not found; reinitializing the module to rescan", "token", sel.String())
			if err := c.mod.reinitialize(gen); err != nil {
				return nil, err
			}
			c.mod.mu.RLock()
			defer c.mod.mu.RUnlock()
			return listTokens(c.api, c.mod.libraryDesc)
		}
	}
	return descs, nil
}

func matchingDescs(sel *uri.URI, descs []uri.TokenInfo) []uri.TokenInfo {
	var out []uri.TokenInfo
	for _, d := range descs {
		if sel.MatchesToken(d) {
			out = append(out, d)
		}
	}
	return out
}

func describeAll(descs []uri.TokenInfo) string {
	if len(descs) == 0 {
		return "none"
	}
	parts := make([]string, len(descs))
	for i, d := range descs {
		parts[i] = d.Describe()
	}
	return strings.Join(parts, ", ")
}

// newToken makes the token a selector chose, not attached yet: its
// description is what the selector says of it.
func (c *core) newToken(sel *uri.URI) *token {
	wait := c.cfg.WaitTimeout
	if wait <= 0 {
		wait = DefaultWaitTimeout
	}
	d := uri.TokenInfo{Label: sel.Token, Serial: sel.Serial, Model: sel.Model, Manufacturer: sel.Manufacturer}
	t := &token{p: c, sel: sel, desc: d, wait: wait}
	t.caps.Store(&tokenCaps{})
	return t
}

// sessionLimit is the pool size for a token: the selector's max-sessions,
// Config.MaxSessions, or the default (lowered to the token's own limit).
func (c *core) sessionLimit(sel *uri.URI, ti pkcs11.TokenInfo, tiErr error) int {
	max := c.cfg.MaxSessions
	if sel.MaxSessions > 0 {
		max = sel.MaxSessions
	}
	if max <= 0 {
		max = DefaultMaxSessions
		// A token that states a finite session limit below the default gets
		// its own limit (0 is CK_EFFECTIVELY_INFINITE, all ones unknown).
		if n := ti.MaxSessionCount; tiErr == nil && n > 0 && n < uint(max) {
			max = int(n)
		}
	}
	return max
}

// attachTo makes t the token d: PIN, session pool, login (once, now, so a
// wrong PIN fails here rather than at first use) and mechanisms.
func (t *token) attachTo(ctx context.Context, d uri.TokenInfo) error {
	c := t.p
	pin, src, err := c.cfg.resolvePIN(t.sel, d.Label)
	if err != nil {
		return fmt.Errorf("pkcs11: PIN for token %q: %w", d.Label, trimPrefix(err))
	}
	ti, tiErr := c.api.GetTokenInfo(d.SlotID)
	if tiErr == nil && ti.Flags&pkcs11.CKF_LOGIN_REQUIRED != 0 && ti.Flags&pkcs11.CKF_USER_PIN_INITIALIZED == 0 {
		// Being set up (softhsm2-util sets the user PIN after creating
		// the token): not an answer about the PIN, so nothing is sent.
		return &Error{Op: "log in", Token: d.Label, Class: ClassDevice, Err: errors.New("the token has no user PIN yet")}
	}
	if tiErr == nil && ti.Flags&pkcs11.CKF_LOGIN_REQUIRED != 0 && pin == "" {
		return &Error{Op: "log in", Token: d.Label, Class: ClassPIN, Err: fmt.Errorf(
			"the token needs a PIN: give pin-source or pin-value in its URI, Config.PINSource, or $%s", PINEnv)}
	}
	t.mu.Lock()
	t.slot, t.desc, t.pin, t.pinSrc = d.SlotID, d, pin, src
	t.down, t.pinKO, t.pending = nil, nil, false
	if t.sem == nil {
		t.sem = make(chan struct{}, c.sessionLimit(t.sel, ti, tiErr))
	}
	t.epoch++
	t.mu.Unlock()
	if err := c.guard.check(t); err != nil {
		t.mu.Lock()
		t.pinKO = err
		t.mu.Unlock()
		return err
	}
	if err := c.checkLoggedInPIN(t); err != nil {
		return err
	}
	s, err := t.get(ctx, false)
	if err != nil {
		return err
	}
	t.put(s)
	t.readMechanisms()
	return nil
}

// trimPrefix drops a leading "pkcs11: " from an error of this package
// wrapped once more, so that messages do not stutter.
func trimPrefix(err error) error {
	if s, ok := strings.CutPrefix(err.Error(), "pkcs11: "); ok {
		return &prefixless{s, err}
	}
	return err
}

type prefixless struct {
	msg string
	err error
}

func (p *prefixless) Error() string { return p.msg }
func (p *prefixless) Unwrap() error { return p.err }

// setPending marks t as not attached: why (nil for "not present") is
// what its users are told.
func (t *token) setPending(why error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending = true
	if ClassOf(why) == ClassPIN {
		t.pinKO = why
		return
	}
	cause := errPending
	if why != nil {
		cause = fmt.Errorf("%w: %w", errPending, why)
	}
	t.down = &Error{Op: "reach token", Token: t.desc.Label, What: t.sel.String(), Class: ClassDevice,
		Err: fmt.Errorf("%w: %w", ErrTokenUnavailable, cause)}
}

func (t *token) isPending() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pending
}

// tryAttach looks for a pending token among the module's slots and
// attaches it. A module whose other tokens are all pending too is
// reinitialized to rescan (at growing intervals), since SoftHSM shows new
// tokens only to a new C_Initialize; with tokens attached, reinitializing
// would cut their sessions, so only the slot list is read.
func (t *token) tryAttach(ctx context.Context) error {
	c := t.p
	t.recoverMu.Lock()
	defer t.recoverMu.Unlock()
	c.mod.mu.RLock()
	gen := c.mod.gen.Load()
	descs, err := listTokens(c.api, c.mod.libraryDesc)
	c.mod.mu.RUnlock()
	if err != nil {
		return err
	}
	d, ok := c.unclaimed(t, descs)
	// A token the module lists but could not attach (being set up when it
	// was seen) may look stale to the module until it initializes again.
	if (!ok || t.notReady) && c.mod.ownsInit && c.allPending() && !time.Now().Before(t.reinitAfter) {
		t.reinitWait = min(max(2*t.reinitWait, time.Second), 30*time.Second)
		t.reinitAfter = time.Now().Add(t.reinitWait)
		if err := c.mod.reinitialize(gen); err != nil {
			return err
		}
		c.mod.mu.RLock()
		descs, err = listTokens(c.api, c.mod.libraryDesc)
		c.mod.mu.RUnlock()
		if err != nil {
			return err
		}
		d, ok = c.unclaimed(t, descs)
	}
	if !ok {
		return ErrNotFound
	}
	if err := t.attachTo(ctx, d); err != nil {
		t.notReady = ClassOf(err) == ClassDevice
		t.setPending(err)
		return err
	}
	t.notReady = false
	t.recoveries.Add(1)
	c.log.Info("token attached", "token", d.Label, "serial", d.Serial, "slot", d.SlotID)
	c.capsChanged()
	return nil
}

// unclaimed returns a token t's selector matches that no other token of
// the provider is attached to.
func (c *core) unclaimed(t *token, descs []uri.TokenInfo) (uri.TokenInfo, bool) {
	for _, d := range matchingDescs(t.sel, descs) {
		taken := false
		for _, o := range c.tokens {
			if o != t && !o.isPending() {
				if slot, _, od := o.state(); slot == d.SlotID || od.Serial == d.Serial && od.Label == d.Label {
					taken = true
				}
			}
		}
		if !taken {
			return d, true
		}
	}
	return uri.TokenInfo{}, false
}

func (c *core) allPending() bool {
	for _, t := range c.tokens {
		if !t.isPending() {
			return false
		}
	}
	return true
}

// capsChanged recomputes the root view's capabilities and tells the
// registries using it.
func (c *core) capsChanged() {
	if c.root != nil {
		caps := unionCaps(c.root.tokens)
		c.root.caps.Store(&caps)
	}
	c.hookMu.Lock()
	hooks := append([]func(){}, c.hooks...)
	c.hookMu.Unlock()
	for _, f := range hooks {
		f()
	}
}
