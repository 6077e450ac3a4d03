//go:build cgo && !nopkcs11

package pkcs11

import (
	"cmp"
	"context"
	"crypto"
	"crypto/cipher"
	"errors"
	"fmt"
	"github.com/offload/offload/providers/pkcs11/uri"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/pkcs11"
	"github.com/offload/offload/provider"
)

// Available reports whether this build can load PKCS #11 modules.
const Available = true

// core is what every view of one opened provider shares.
type core struct {
	cfg    Config
	mod    *module
	api    api
	log    *slog.Logger
	tokens []*token

	closed atomic.Bool
	// freshModule: this provider's Open initialized the module.
	freshModule bool
	stop        chan struct{}
	wg          sync.WaitGroup
	closeOnce   sync.Once
	closeErr    error
}

// Provider offers the keys, signers, AEADs and key agreement of one
// PKCS #11 module's tokens. A pin such as "pkcs11:token=unit0" narrows it
// to one token (see Narrow). It is safe for concurrent use.
type Provider struct {
	c      *core
	name   string
	tokens []*token // the tokens of this view
	caps   []provider.Capability
	root   bool
}

var (
	_ provider.Provider             = (*Provider)(nil)
	_ provider.Identifier           = (*Provider)(nil)
	_ provider.Matcher              = (*Provider)(nil)
	_ provider.Narrower             = (*Provider)(nil)
	_ provider.AEADProvider         = (*Provider)(nil)
	_ provider.SignerProvider       = (*Provider)(nil)
	_ provider.KeyGenerator         = (*Provider)(nil)
	_ provider.KeyAgreementProvider = (*Provider)(nil)
)

// Open loads the module, finds the tokens cfg selects (before any login),
// logs in to each once and reads what each offers. A wrong PIN fails Open
// and is not tried again.
func Open(cfg Config) (*Provider, error) {
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
	c := &core{cfg: cfg, mod: mod, api: mod.ctx, log: cfg.logger(), stop: make(chan struct{}), freshModule: fresh}
	if cfg.Faults != nil {
		c.api = cfg.Faults.wrap(c.api)
	}
	if cfg.testHooks != nil && cfg.testHooks.wrap != nil {
		c.api = cfg.testHooks.wrap(c.api)
	}
	if err := c.attach(sels); err != nil {
		c.close()
		return nil, err
	}
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
	return c.view(cfg.name(), c.tokens, true), nil
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

// attach chooses the tokens, logs in and reads mechanisms.
func (c *core) attach(sels []*uri.URI) error {
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
			t, err := c.newToken(sel, d)
			if err != nil {
				return err
			}
			c.tokens = append(c.tokens, t)
		}
		if n == 0 {
			return &Error{Op: "find token", What: sel.String(), Class: ClassDevice,
				Err: fmt.Errorf("%w: no token matches (present: %s)", ErrNotFound, describeAll(descs))}
		}
	}
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
		n := 0
		for _, d := range descs {
			if sel.MatchesToken(d) {
				n++
			}
		}
		if n == 0 {
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

func (c *core) newToken(sel *uri.URI, d uri.TokenInfo) (*token, error) {
	pin, err := c.cfg.resolvePIN(sel, d.Label)
	if err != nil {
		return nil, fmt.Errorf("pkcs11: PIN for token %q: %w", d.Label, err)
	}
	ti, tiErr := c.api.GetTokenInfo(d.SlotID)
	if tiErr == nil && ti.Flags&pkcs11.CKF_LOGIN_REQUIRED != 0 && pin == "" {
		return nil, fmt.Errorf("pkcs11: token %q needs a PIN: give pin-source or pin-value in its URI, Config.PINSource, or $%s",
			d.Label, PINEnv)
	}
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
	wait := c.cfg.WaitTimeout
	if wait <= 0 {
		wait = DefaultWaitTimeout
	}
	t := &token{p: c, sel: sel, pin: pin, slot: d.SlotID, desc: d, sem: make(chan struct{}, max), wait: wait}
	// Log in once, now, so a wrong PIN fails Open instead of the first use.
	s, err := t.get(context.Background(), false)
	if err != nil {
		return nil, err
	}
	t.put(s)
	t.readMechanisms()
	return t, nil
}

func (c *core) view(name string, tokens []*token, root bool) *Provider {
	p := &Provider{c: c, name: name, tokens: tokens, root: root}
	p.caps = unionCaps(tokens)
	return p
}

func (c *core) close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.stop)
		c.wg.Wait()
		c.mod.mu.RLock()
		for _, t := range c.tokens {
			t.mu.Lock()
			for _, s := range t.idle {
				if s.gen == c.mod.gen.Load() {
					_ = c.api.CloseSession(s.h)
				}
			}
			t.idle = nil
			t.mu.Unlock()
		}
		c.mod.mu.RUnlock()
		c.closeErr = c.mod.release()
	})
	return c.closeErr
}

// Name returns the provider's name ("pkcs11" unless configured).
func (p *Provider) Name() string { return p.name }

// Kind is hardware: the keys and the work live in a module apart from
// the process, which is what the kind means, and software-only policy must
// exclude it. Whether the token itself says hardware performs a mechanism
// (CKF_HW) is each capability's hardware flag: SoftHSM sets it nowhere,
// so its capabilities carry no hardware flag.
func (p *Provider) Kind() provider.Kind { return provider.KindHardware }

// Capabilities lists the catalog algorithms the tokens' mechanisms cover.
func (p *Provider) Capabilities() []provider.Capability {
	return append([]provider.Capability(nil), p.caps...)
}

// Identity keys calibration results: module, and each token's label,
// model, serial and firmware version.
func (p *Provider) Identity() string {
	var b strings.Builder
	b.WriteString(p.name + "@" + p.c.mod.path)
	for _, t := range p.tokens {
		_, _, d := t.state()
		fmt.Fprintf(&b, ";%s/%s/%s/fw%s", d.Label, d.Model, d.Serial, d.Firmware)
	}
	return b.String()
}

// Close logs out, closes every session and finalizes the module when no
// other provider uses it. Closing a narrowed view does nothing.
func (p *Provider) Close() error {
	if !p.root {
		return nil
	}
	return p.c.close()
}

// Tokens describes the tokens of this provider.
func (p *Provider) Tokens() []uri.TokenInfo {
	out := make([]uri.TokenInfo, len(p.tokens))
	for i, t := range p.tokens {
		_, _, out[i] = t.state()
	}
	return out
}

// Health reports each token's state and session pool.
func (p *Provider) Health() []TokenHealth {
	out := make([]TokenHealth, len(p.tokens))
	for i, t := range p.tokens {
		out[i] = t.health()
	}
	return out
}

// Matches answers pins and deny entries: the provider's name, "pkcs11",
// or a pkcs11: URI whose token attributes match one of its tokens.
func (p *Provider) Matches(spec string) bool {
	if spec == p.name || spec == DefaultName {
		return true
	}
	return len(p.matching(spec)) > 0
}

func (p *Provider) matching(spec string) []*token {
	if !uri.IsURI(spec) {
		return nil
	}
	u, err := uri.Parse(spec)
	if err != nil {
		return nil
	}
	var out []*token
	for _, t := range p.tokens {
		if _, _, d := t.state(); u.MatchesToken(d) {
			out = append(out, t)
		}
	}
	return out
}

// Narrow returns a view of the tokens spec names, for a pin such as
// "aes128-gcm=pkcs11:token=unit0". The view shares sessions and state;
// closing it does nothing.
func (p *Provider) Narrow(spec string) (provider.Provider, error) {
	if spec == p.name || spec == DefaultName {
		return p, nil
	}
	ts := p.matching(spec)
	if len(ts) == 0 {
		return nil, &provider.UnknownProviderError{Name: spec}
	}
	if len(ts) == len(p.tokens) {
		return p, nil
	}
	return p.c.view(p.name, ts, false), nil
}

// Unwrap-free accessors used by the registry's optional interfaces follow.

// NewAEAD returns an AES-GCM AEAD whose key is imported into a token as a
// session (non-token), sensitive object. The AEAD holds one session for
// its life; Close (provider.Release) frees the session and the key.
// Instances are spread over the tokens that offer the algorithm, least in
// use first.
func (p *Provider) NewAEAD(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	return p.newGCM(alg, key)
}

// CanOpen reports whether ref is a pkcs11: URI for this provider's module.
func (p *Provider) CanOpen(ref string) bool {
	if !uri.IsURI(ref) {
		return false
	}
	u, err := uri.Parse(ref)
	if err != nil {
		return true // let Signer report the syntax error
	}
	if m := u.Module(); m != "" && !sameModule(m, p.c.mod.path) {
		return false
	}
	return len(p.tokensFor(u)) > 0
}

// Signer opens the private key a pkcs11: URI names as a crypto.Signer.
// The token is matched by the URI's token attributes, then the key by id
// and/or label; none or several matches are errors naming what was asked.
// The key never leaves the token and there is no software fallback.
func (p *Provider) Signer(ctx context.Context, ref string) (crypto.Signer, error) {
	return p.openSigner(ctx, ref)
}

// GenerateSigner creates a key pair for alg. With an empty ref it is a
// session key pair, gone when the signer is closed (calibration, tests);
// with a URI it is stored on the token under the URI's label and id.
func (p *Provider) GenerateSigner(ctx context.Context, alg *provider.Algorithm, ref string) (crypto.Signer, error) {
	kt, err := keyTypeFor(alg)
	if err != nil {
		return nil, err
	}
	if ref == "" {
		t, err := p.pickToken(alg.Name, provider.OpSign)
		if err != nil {
			return nil, err
		}
		return p.generate(ctx, t, kt, nil)
	}
	u, err := uri.Parse(ref)
	if err != nil {
		return nil, err
	}
	return p.Generate(ctx, u, kt)
}

// NewKeyAgreement makes an ephemeral EC key pair on a token for ECDH.
func (p *Provider) NewKeyAgreement(alg *provider.Algorithm) (provider.KeyAgreement, error) {
	return p.newECDH(alg)
}

// tokensFor returns the tokens whose attributes match u.
func (p *Provider) tokensFor(u *uri.URI) []*token {
	var out []*token
	for _, t := range p.tokens {
		if _, _, d := t.state(); u.MatchesToken(d) {
			out = append(out, t)
		}
	}
	return out
}

// pickToken returns the up token offering alg with the fewest sessions in
// use (ties: the first).
func (p *Provider) pickToken(alg string, ops provider.Op) (*token, error) {
	var best *token
	for _, t := range p.tokens {
		if !t.offers(alg, ops) || t.usable() != nil {
			continue
		}
		if best == nil || t.inUse() < best.inUse() {
			best = t
		}
	}
	if best == nil {
		return nil, p.noToken(alg, alg, ops)
	}
	return best, nil
}

// noToken explains why no token serves alg: the tokens offering it are
// unavailable (a device error naming them), or none offers it.
func (p *Provider) noToken(op, alg string, ops provider.Op) error {
	var labels []string
	var cause error
	for _, t := range p.tokens {
		if !t.offers(alg, ops) {
			continue
		}
		if err := t.usable(); err != nil {
			labels = append(labels, fmt.Sprintf("%q", t.label()))
			cause = cmp.Or(cause, err)
		}
	}
	if len(labels) == 0 {
		return &Error{Op: op, Class: ClassUnsupported,
			Err: fmt.Errorf("%w: no token of %s offers %s", ErrUnsupported, p.name, alg)}
	}
	class := ClassDevice
	if ClassOf(cause) == ClassPIN || ClassOf(cause) == ClassOther {
		class = ClassOf(cause)
	}
	which := "token " + labels[0]
	if len(labels) > 1 {
		which = "tokens " + strings.Join(labels, ", ")
	}
	return &Error{Op: op, Class: class, Err: fmt.Errorf("%s offering %s unavailable: %w", which, alg, cause)}
}

// rankTokens orders the up tokens offering alg by sessions in use.
func (p *Provider) rankTokens(alg string, ops provider.Op) []*token {
	var out []*token
	for _, t := range p.tokens {
		if t.offers(alg, ops) && t.usable() == nil {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].inUse() < out[j].inUse() })
	return out
}

func ctxTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
