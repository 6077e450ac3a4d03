package main

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/uri"
	"github.com/offload/offload/sshd/config"
)

// sshdRegistry builds the registry a configuration describes: the cpu and
// software providers always, a PKCS #11 provider when PKCS11Module is set
// or a HostKey is a pkcs11: URI, the policy of CryptoPolicy, ProviderMap
// and ProviderDeny, and calibration cached under CalibrationCache. All
// registries of one process share metrics, so counters survive reloads.
//
// The accelerator is optional unless a host key lives in it: a module
// that does not load, or a token that is absent, failing or refuses its
// PIN, is a warning, the provider attaches the token when it appears, and
// a host key on it fails closed (openHostKeys).
func sshdRegistry(c *config.Config, metrics *provider.Metrics, log *slog.Logger) (*provider.Registry, error) {
	f, err := cpu.Mask(cpu.Detect(), os.Getenv(cpu.MaskEnv))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpu.MaskEnv, err)
	}
	calCfg := provider.CalibratorConfig{Dir: c.CalibrationCache, Logger: log}
	if c.CalibrationCache == "none" {
		calCfg = provider.CalibratorConfig{NoCache: true, Logger: log}
	}
	reg := provider.New(provider.Config{Calibrator: provider.NewCalibrator(calCfg), Metrics: metrics, Logger: log})
	var extra []provider.Provider
	if p, err := openPKCS11(c, log); err != nil {
		return nil, err
	} else if p != nil {
		extra = append(extra, p)
	}
	if err := populate(reg, f, extra...); err != nil {
		return nil, err
	}
	if err := reg.SetPolicy(c.Policy()); err != nil {
		reg.Close()
		return nil, fmt.Errorf("CryptoPolicy/ProviderMap/ProviderDeny: %w", err)
	}
	return reg, nil
}

// openPKCS11 opens the PKCS #11 provider, or returns nil when the
// configuration uses no token. The tokens are PKCS11Token, or else those
// the pkcs11: host keys name. The PIN comes from PKCS11PinSource, the
// URIs' pin-source, or $OFFLOAD_PKCS11_PIN; never from the command line.
// PKCS11Environment is set before the module loads. A module that cannot
// be loaded gives a stand-in provider that says why (missingModule).
func openPKCS11(c *config.Config, log *slog.Logger) (provider.Provider, error) {
	tokens, err := pkcs11Tokens(c)
	if err != nil {
		return nil, err
	}
	if c.PKCS11Module == "" && len(tokens) == 0 {
		return nil, nil
	}
	if c.PKCS11Module == "" && tokens[0].Module() == "" {
		return nil, fmt.Errorf("%s needs a PKCS #11 module: set PKCS11Module, or module-path= (or module-name=) in the URI",
			tokens[0])
	}
	for _, e := range c.PKCS11Env {
		name, value, _ := strings.Cut(e, "=")
		if err := os.Setenv(name, value); err != nil {
			return nil, fmt.Errorf("PKCS11Environment %s: %w", name, err)
		}
	}
	p, err := pkcs11.Open(pkcs11.Config{
		ModulePath: c.PKCS11Module, Tokens: tokens, PINSource: c.PKCS11PinSource, Logger: log,
		AllowMissing: true, StateDir: pinStateDir(c),
	})
	var me *pkcs11.ModuleError
	switch {
	case errors.As(err, &me):
		log.Warn("PKCS #11 module not loaded; starting without it (host keys in its tokens will fail)", "err", err)
		return &missingModule{err: err, tokens: tokens}, nil
	case err != nil:
		return nil, fmt.Errorf("PKCS11Module: %w", err)
	}
	for _, why := range p.Pending() {
		log.Warn("PKCS #11 token not attached; starting without it, it is attached when it appears", "token", why)
	}
	return p, nil
}

// stateDirEnv overrides the default state directory (tests use it).
const stateDirEnv = "OFFLOAD_STATE_DIR"

// pinStateDir is where the provider records refused PINs: PKCS11StateDir,
// or else $OFFLOAD_STATE_DIR, /var/lib/offload as root, and
// $XDG_STATE_HOME/offload (default ~/.local/state/offload) otherwise;
// "" (memory only) for "none".
func pinStateDir(c *config.Config) string {
	switch c.PKCS11StateDir {
	case "none":
		return ""
	case "":
	default:
		return c.PKCS11StateDir
	}
	if d := os.Getenv(stateDirEnv); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/lib/offload"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "offload")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "offload")
	}
	return ""
}

// missingModule stands in for a PKCS #11 provider whose module could not
// be loaded: it serves nothing, answers to the names a pin or deny entry
// would use for it (so the policy is a warning, not an error), says why
// in Pending, and fails every key it is asked for, closed.
type missingModule struct {
	err    error
	tokens []*uri.URI
}

var (
	_ provider.PendingReporter = (*missingModule)(nil)
	_ provider.SignerProvider  = (*missingModule)(nil)
	_ provider.Matcher         = (*missingModule)(nil)
)

func (m *missingModule) Name() string                        { return pkcs11.DefaultName }
func (m *missingModule) Kind() provider.Kind                 { return provider.KindHardware }
func (m *missingModule) Capabilities() []provider.Capability { return nil }
func (m *missingModule) Close() error                        { return nil }
func (m *missingModule) Matches(spec string) bool            { return uri.IsURI(spec) }
func (m *missingModule) CanOpen(ref string) bool             { return uri.IsURI(ref) }

func (m *missingModule) Pending() []string {
	var out []string
	for _, t := range m.tokens {
		out = append(out, fmt.Sprintf("token %s not attached: %v", t, m.err))
	}
	if len(out) == 0 {
		out = append(out, m.err.Error())
	}
	return out
}

func (m *missingModule) Signer(context.Context, string) (crypto.Signer, error) {
	return nil, fmt.Errorf("%w (the key lives only in the token: there is no software fallback)", m.err)
}

func pkcs11Tokens(c *config.Config) ([]*uri.URI, error) {
	refs := c.PKCS11Tokens
	if len(refs) == 0 {
		for _, hk := range c.HostKeys {
			if uri.IsURI(hk) {
				refs = append(refs, hk)
			}
		}
	}
	var out []*uri.URI
	seen := map[string]bool{}
	for _, r := range refs {
		u, err := uri.Parse(r)
		if err != nil {
			return nil, err
		}
		t := u.TokenOnly()
		if k := t.Full(); !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	return out, nil
}

// hostKey is an opened host key and the provider that holds it.
type hostKey struct {
	ref      string
	signer   crypto.Signer
	provider string
}

// openHostKeys opens every HostKey through the registry. Without a
// HostKey line it opens those of sshd's default files
// (config.DefaultHostKeys) that it can, skipping the others as sshd does;
// none at all is an error: an ephemeral key would change at each start.
// A configured key that cannot be opened is logged and skipped, as sshd
// does; the start fails when no key remains. With HostKeyAgent, a HostKey
// whose private key the registry cannot open is, as in sshd, the public
// key of a key the agent holds (openHostKey).
func openHostKeys(ctx context.Context, c *config.Config, reg *provider.Registry, log *slog.Logger) ([]hostKey, error) {
	defaults := !c.IsSet("HostKey")
	agent := openHostAgent(c, log)
	var out []hostKey
	var failed []string
	for _, ref := range c.HostKeys {
		k, err := openHostKey(ctx, reg, agent, ref)
		if err != nil && defaults {
			continue // a default key that does not exist or cannot be read
		}
		if err != nil {
			msg := fmt.Sprintf("HostKey %s: %v", provider.RedactRef(ref), err)
			failed = append(failed, msg)
			if log != nil {
				log.Error("unable to load host key, skipped", "err", msg)
			}
			continue
		}
		out = append(out, k)
	}
	switch {
	case len(out) > 0:
		return out, nil
	case len(failed) > 0:
		return nil, fmt.Errorf("no host keys available: %s", strings.Join(failed, "; "))
	}
	return nil, fmt.Errorf("no HostKey configured (a key file, or a pkcs11: URI), and none of %s can be read",
		strings.Join(redactRefs(c.HostKeys), ", "))
}

// openHostKey opens ref through the registry or, failing that and with
// an agent (HostKeyAgent), as a public key file whose private key the
// agent holds; the registry's error is the one reported when neither can.
func openHostKey(ctx context.Context, reg *provider.Registry, agent *hostAgent, ref string) (hostKey, error) {
	s, p, err := reg.OpenSigner(ctx, ref)
	if err == nil {
		return hostKey{ref: ref, signer: s, provider: p.Name()}, nil
	}
	if uri.IsURI(ref) {
		return hostKey{}, err
	}
	if agent == nil {
		if _, perr := readPublicKeyFile(ref); perr == nil {
			err = errPublicOnly
		}
		return hostKey{}, err
	}
	as, aerr := agent.signer(ref)
	if aerr != nil {
		return hostKey{}, err
	}
	return hostKey{ref: ref, signer: as, provider: agentProviderName}, nil
}

func redactRefs(refs []string) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = provider.RedactRef(r)
	}
	return out
}

func signers(keys []hostKey) []crypto.Signer {
	out := make([]crypto.Signer, len(keys))
	for i, k := range keys {
		out[i] = k.signer
	}
	return out
}
