package main

import (
	"context"
	"crypto"
	"fmt"
	"log/slog"
	"os"
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
			provider.RedactRef(tokens[0].String()))
	}
	p, err := pkcs11.Open(pkcs11.Config{
		ModulePath: c.PKCS11Module, Tokens: tokens, PINSource: c.PKCS11PinSource, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("PKCS11Module: %w", err)
	}
	return p, nil
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
func openHostKeys(ctx context.Context, c *config.Config, reg *provider.Registry) ([]hostKey, error) {
	defaults := !c.IsSet("HostKey")
	var out []hostKey
	for _, ref := range c.HostKeys {
		s, p, err := reg.OpenSigner(ctx, ref)
		if err != nil && defaults {
			continue // a default key that does not exist or cannot be read
		}
		if err != nil {
			return nil, fmt.Errorf("HostKey %s: %w", provider.RedactRef(ref), err)
		}
		out = append(out, hostKey{ref: ref, signer: s, provider: p.Name()})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no HostKey configured (a key file, or a pkcs11: URI), and none of %s can be read",
			strings.Join(c.HostKeys, ", "))
	}
	return out, nil
}

func signers(keys []hostKey) []crypto.Signer {
	out := make([]crypto.Signer, len(keys))
	for i, k := range keys {
		out[i] = k.signer
	}
	return out
}
