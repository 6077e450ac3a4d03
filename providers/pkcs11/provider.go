//go:build cgo && !nopkcs11

package pkcs11

import (
	"cmp"
	"context"
	"crypto"
	"crypto/cipher"
	"fmt"
	"github.com/offload/offload/providers/pkcs11/uri"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	root   *Provider
	guard  *pinGuard

	gate *gate // calls in flight; Close waits for them
	// freshModule: this provider's Open initialized the module.
	freshModule bool
	stop        chan struct{} // closed when Close begins
	wg          sync.WaitGroup
	closeOnce   sync.Once
	closeErr    error

	hookMu sync.Mutex
	hooks  []func() // NotifyChange callbacks
}

// Provider offers the keys, signers, AEADs and key agreement of one
// PKCS #11 module's tokens. A pin such as "pkcs11:token=unit0" narrows it
// to one token (see Narrow). It is safe for concurrent use.
type Provider struct {
	c      *core
	name   string
	tokens []*token // the tokens of this view
	caps   atomic.Pointer[[]provider.Capability]
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
	_ provider.ChangeNotifier       = (*Provider)(nil)
	_ provider.PendingReporter      = (*Provider)(nil)
	_ provider.PoolReporter         = (*Provider)(nil)
	_ provider.Excluder             = (*Provider)(nil)

	_ provider.KeyAgreementContextProvider = (*Provider)(nil)
)

func (c *core) view(name string, tokens []*token, root bool) *Provider {
	p := &Provider{c: c, name: name, tokens: tokens, root: root}
	caps := unionCaps(tokens)
	p.caps.Store(&caps)
	return p
}

// closed reports whether Close has begun.
func (c *core) closed() bool { return c.gate.state.Load()&closedBit != 0 }

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
	return append([]provider.Capability(nil), *p.caps.Load()...)
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

// Close refuses new calls (they fail with ErrClosed), waits up to
// Config.CloseTimeout for the calls in flight, closes the idle sessions
// and finalizes the module when no other provider uses it. Signers,
// AEADs and key agreements of the provider return ErrClosed afterwards;
// nothing of theirs reaches the module. Closing a narrowed view does
// nothing.
func (p *Provider) Close() error {
	if p == nil || !p.root {
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

// CheckSpec refuses a pkcs11: URI in a pin or deny entry that does not
// parse: an unknown or misspelt attribute would match no token, and the
// entry would select or deny nothing. Other specs are not its business.
func (p *Provider) CheckSpec(spec string) error {
	if !uri.IsURI(spec) {
		return nil
	}
	_, err := uri.Parse(spec)
	return err
}

var _ provider.SpecChecker = (*Provider)(nil)

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

// Exclude answers a deny entry naming some of the provider's tokens
// ("pkcs11:token=web") with a view without them (see provider.Excluder).
func (p *Provider) Exclude(spec string) (provider.Provider, bool) {
	named := p.matching(spec)
	if len(named) == 0 || len(named) == len(p.tokens) {
		return p, false
	}
	var rest []*token
	for _, t := range p.tokens {
		if !slices.Contains(named, t) {
			rest = append(rest, t)
		}
	}
	return p.c.view(p.name, rest, false), true
}

// NotifyChange registers f to be called when the provider's capabilities
// change: a pending token attached (see provider.ChangeNotifier).
func (p *Provider) NotifyChange(f func()) {
	p.c.hookMu.Lock()
	p.c.hooks = append(p.c.hooks, f)
	p.c.hookMu.Unlock()
}

// Pending describes the tokens of this view that are configured but not
// attached, and why (see Config.AllowMissing).
func (p *Provider) Pending() []string {
	var out []string
	for _, t := range p.tokens {
		if !t.isPending() {
			continue
		}
		err := t.usable()
		out = append(out, fmt.Sprintf("token %s not attached: %v", t.sel, trimPrefix(err)))
	}
	return out
}

// PoolStats reports each token's session pool (see provider.PoolReporter).
func (p *Provider) PoolStats() []provider.PoolStats {
	out := make([]provider.PoolStats, len(p.tokens))
	for i, t := range p.tokens {
		h := t.health()
		out[i] = provider.PoolStats{Provider: p.name, Pool: h.Token.Label, Up: h.Up, InUse: h.InUse, Idle: h.Idle,
			Max: h.Max, Waits: t.waits.Load(), Timeouts: t.timeouts.Load(), WaitTime: time.Duration(t.waitNS.Load()),
			Recoveries: h.Recoveries}
	}
	return out
}

// NewAEAD returns an AES-GCM AEAD whose key is imported into a token as a
// session (non-token), sensitive object. The AEAD holds one session for
// its life; Close (provider.Release) frees the session and the key.
// Instances are spread over the tokens that offer the algorithm, least in
// use first. The AEAD implements provider.FallibleAEAD and
// provider.Provenancer.
func (p *Provider) NewAEAD(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	if err := p.c.enter("import AES key", ""); err != nil {
		return nil, err
	}
	defer p.c.exit()
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
// ctx bounds the wait for a session and the recovery of a lost token.
func (p *Provider) Signer(ctx context.Context, ref string) (crypto.Signer, error) {
	if err := p.c.enter("open key", provider.RedactRef(ref)); err != nil {
		return nil, err
	}
	defer p.c.exit()
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
	if ref != "" {
		return p.Generate(ctx, ref, kt)
	}
	if err := p.c.enter("generate "+string(kt), ""); err != nil {
		return nil, err
	}
	defer p.c.exit()
	t, err := p.pickToken(alg.Name, provider.OpSign)
	if err != nil {
		return nil, err
	}
	return p.generate(ctx, t, kt, nil)
}

// NewKeyAgreement makes an ephemeral EC key pair on a token for ECDH,
// waiting at most Config.Deadline.
func (p *Provider) NewKeyAgreement(alg *provider.Algorithm) (provider.KeyAgreement, error) {
	return p.NewKeyAgreementContext(context.Background(), alg)
}

// NewKeyAgreementContext is NewKeyAgreement bounded by ctx as well.
func (p *Provider) NewKeyAgreementContext(ctx context.Context, alg *provider.Algorithm) (provider.KeyAgreement, error) {
	if err := p.c.enter("generate ECDH key", alg.Name); err != nil {
		return nil, err
	}
	defer p.c.exit()
	return p.newECDH(ctx, alg)
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
	return &Error{Op: op, Class: class, Err: fmt.Errorf("%s offering %s unavailable: %w", which, alg, trimPrefix(cause))}
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
