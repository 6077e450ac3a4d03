package ipc

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd/transport"
)

// ChildConfig is the first message the monitor sends a child (TypeConfig):
// what it needs to run the transport, and its role's settings.
type ChildConfig struct {
	Transport TransportConfig
	LogLevel  slog.Level
	// Pre-auth workers.
	LoginGraceTime time.Duration // bound on the handshake and authentication
	MaxRequests    int           // bound on userauth requests (auth.ServeOptions)
	// Post-auth processes.
	User string // the account the process serves
}

// TransportConfig is the part of transport.Config a child needs, in a form
// that travels. The child builds its own registry of the software and CPU
// providers; Pins carries the monitor's choice of provider for each
// primitive, so that measurements made once in the monitor steer the
// children too.
type TransportConfig struct {
	Ciphers, MACs, KexAlgorithms, HostKeyAlgorithms, ServerSigAlgs []string

	Version                   string
	RekeyBytes                uint64
	RekeyInterval, KexTimeout time.Duration
	HostPublicKeys            [][]byte // SSH wire format
	Mode                      string   // provider.Mode
	Pins                      map[string]string
}

// Marshal encodes c.
func (c *ChildConfig) Marshal() ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("ipc: config: %w", err)
	}
	if len(b) > MaxMessage {
		return nil, ErrTooLarge
	}
	return b, nil
}

// ParseChildConfig decodes a ChildConfig.
func ParseChildConfig(p []byte) (*ChildConfig, error) {
	var c ChildConfig
	if err := json.Unmarshal(p, &c); err != nil {
		return nil, &ProtocolError{Type: TypeConfig, Err: err}
	}
	return &c, nil
}

// Build makes the transport.Config and registry the configuration
// describes; keys held by the monitor are public keys only.
func (t *TransportConfig) Build(log *slog.Logger) (*transport.Config, *provider.Registry, error) {
	reg, err := t.registry(log)
	if err != nil {
		return nil, nil, err
	}
	cfg := &transport.Config{
		Registry: reg, Ciphers: t.Ciphers, MACs: t.MACs, KexAlgorithms: t.KexAlgorithms,
		HostKeyAlgorithms: t.HostKeyAlgorithms, ServerSigAlgs: t.ServerSigAlgs, Version: t.Version,
		RekeyBytes: t.RekeyBytes, RekeyInterval: t.RekeyInterval, KexTimeout: t.KexTimeout, Logger: log,
	}
	for i, b := range t.HostPublicKeys {
		pub, err := ssh.ParsePublicKey(b)
		if err != nil {
			reg.Close()
			return nil, nil, fmt.Errorf("ipc: host key %d: %w", i, err)
		}
		cfg.HostPublicKeys = append(cfg.HostPublicKeys, pub)
	}
	return cfg, reg, nil
}

func (t *TransportConfig) registry(log *slog.Logger) (*provider.Registry, error) {
	mode, err := provider.ParseMode(t.Mode)
	if t.Mode == "" {
		mode, err = provider.ModeFastest, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ipc: %w", err)
	}
	reg := provider.New(provider.Config{Policy: provider.Policy{Mode: mode, Pins: t.Pins}, Logger: log})
	for _, p := range []provider.Provider{cpu.New(cpu.Detect()), software.New()} {
		if err := reg.Register(p); err != nil {
			reg.Close()
			return nil, fmt.Errorf("ipc: %w", err)
		}
	}
	return reg, nil
}

// ChildPins returns, for every registry primitive the SSH algorithms are
// built from, the provider reg chooses when it is one a child also has
// (software or CPU): a child pins the same. Primitives served by other
// providers (a token) are left out, with their names in away.
func ChildPins(reg *provider.Registry) (pins map[string]string, away []string) {
	pins = map[string]string{}
	seen := map[string]bool{}
	for _, a := range transport.Algorithms() {
		for _, prim := range a.Primitives {
			if seen[prim] {
				continue
			}
			seen[prim] = true
			ex, err := reg.Explain(prim)
			if err != nil {
				continue
			}
			if kind := chosenKind(ex); kind == provider.KindSoftware || kind == provider.KindCPU {
				pins[prim] = ex.Chosen
			} else {
				away = append(away, prim+"="+ex.Chosen)
			}
		}
	}
	return pins, away
}

func chosenKind(ex *provider.Explanation) provider.Kind {
	for _, c := range ex.Candidates {
		if c.Provider == ex.Chosen {
			return c.Kind
		}
	}
	return provider.KindHardware
}
