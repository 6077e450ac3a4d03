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
	"github.com/offload/offload/sshd/sandbox"
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
	// Metrics makes the child count provider operations and send them
	// (TypeMetrics) to the monitor.
	Metrics bool
	// Identity, when set, is who the child becomes before it reads
	// anything else: the monitor starts its children as itself (so that
	// a program only root may execute can run them) and each drops its
	// privileges first thing.
	Identity *sandbox.Identity `json:",omitempty"`
	// LoginRecords says the monitor writes login records for the
	// post-auth process's pty sessions.
	LoginRecords bool `json:",omitempty"`
	// PAM, for a session keeper (RoleSession), is the PAM session to
	// open before it starts the post-auth process.
	PAM *PAMSession `json:",omitempty"`
	// Chroot, for a post-auth process, is the ChrootDirectory it confines
	// itself to (checked by the monitor and again by the process) before
	// it drops its privileges.
	Chroot string `json:",omitempty"`
}

// PAMSession selects the PAM session of a user's post-auth process.
type PAMSession struct {
	Service, ConfDir string
	RemoteHost       string // the first connection's client address (PAM_RHOST)
	// Spawn, for an in-process server's keeper, starts the connection's
	// session programs on TypeSpawn requests instead of a post-auth
	// process.
	Spawn bool `json:",omitempty"`
}

// Become drops the child's privileges to its configured Identity, if
// any (see sandbox.DropTo).
func (c *ChildConfig) Become() error {
	if c.Identity == nil {
		return nil
	}
	return sandbox.DropTo(*c.Identity)
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
	HostCertificates          [][]byte // OpenSSH host certificates, wire format
	CipherSelection           string   // transport.Config.CipherSelection
	Compression               bool     // transport.Config.Compression
	// ModuliFile is read by the pre-auth workers as they start, before
	// their sandbox closes (as the sshd account: it must be readable to
	// it, as /etc/ssh/moduli is).
	ModuliFile   string
	CipherScores map[string]float64
	Mode         string // provider.Mode
	Pins         map[string]string
	// Remote maps AEAD algorithms to the monitor's provider that serves
	// them (a token): the child reaches it through the monitor.
	Remote map[string]string
	// HostKeyProvenance says where each host key lives (by the hex of its
	// wire form), for the children's log lines.
	HostKeyProvenance map[string]string
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
func (t *TransportConfig) Build(peer *Peer, log *slog.Logger, metrics *provider.Metrics) (*transport.Config, *provider.Registry, error) {
	reg, err := t.registry(peer, log, metrics)
	if err != nil {
		return nil, nil, err
	}
	cfg := &transport.Config{
		Registry: reg, Ciphers: t.Ciphers, MACs: t.MACs, KexAlgorithms: t.KexAlgorithms,
		HostKeyAlgorithms: t.HostKeyAlgorithms, ServerSigAlgs: t.ServerSigAlgs, Version: t.Version,
		RekeyBytes: t.RekeyBytes, RekeyInterval: t.RekeyInterval, KexTimeout: t.KexTimeout, Logger: log,
		CipherSelection: t.CipherSelection, CipherScores: t.CipherScores, ModuliFile: t.ModuliFile,
		Compression:   t.Compression,
		HostBoundAuth: true, // the monitor's auth verifies host-bound requests (sshd.newLogin)
	}
	for i, b := range t.HostCertificates {
		pub, err := ssh.ParsePublicKey(b)
		cert, ok := pub.(*ssh.Certificate)
		if err != nil || !ok {
			reg.Close()
			return nil, nil, fmt.Errorf("ipc: host certificate %d: not a certificate (%v)", i, err)
		}
		cfg.HostCertificates = append(cfg.HostCertificates, cert)
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

func (t *TransportConfig) registry(peer *Peer, log *slog.Logger, metrics *provider.Metrics) (*provider.Registry, error) {
	mode, err := provider.ParseMode(t.Mode)
	if t.Mode == "" {
		mode, err = provider.ModeFastest, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ipc: %w", err)
	}
	reg := provider.New(provider.Config{Metrics: metrics, Logger: log})
	for _, p := range append(t.remoteProviders(peer), cpu.New(cpu.Detect()), software.New()) {
		if err := reg.Register(p); err != nil {
			reg.Close()
			return nil, fmt.Errorf("ipc: %w", err)
		}
	}
	// The pins name the providers just registered: set them now, so that
	// they are checked against them.
	if err := reg.SetPolicy(provider.Policy{Mode: mode, Pins: t.Pins}); err != nil {
		reg.Close()
		return nil, fmt.Errorf("ipc: %w", err)
	}
	return reg, nil
}

// Preauth is the transport configuration of the pre-auth workers: the
// monitor's AEADs are for post-auth processes only, so their algorithms
// are neither remote nor pinned there.
func (t TransportConfig) Preauth() TransportConfig {
	pins := map[string]string{}
	for alg, p := range t.Pins {
		if _, remote := t.Remote[alg]; !remote {
			pins[alg] = p
		}
	}
	t.Remote, t.Pins = nil, pins
	return t
}

// Registry builds the registry a child builds from t, with no monitor to
// reach (its remote AEADs cannot be made, only explained): what sshd -T
// shows for separated processes. Close it when done.
func (t *TransportConfig) Registry() (*provider.Registry, error) {
	return t.registry(nil, slog.New(slog.DiscardHandler), nil)
}

// remoteProviders stands in for the monitor's providers of Remote.
func (t *TransportConfig) remoteProviders(peer *Peer) []provider.Provider {
	byName := map[string]*RemoteProvider{}
	var out []provider.Provider
	for alg, name := range t.Remote {
		rp := byName[name]
		if rp == nil {
			rp = &RemoteProvider{Peer: peer, ProvName: name}
			byName[name] = rp
			out = append(out, rp)
		}
		rp.Algorithms = append(rp.Algorithms, alg)
	}
	return out
}

// ChildPins returns, for every registry primitive the SSH algorithms are
// built from, the provider reg chooses: a child pins the same. AEADs
// served by a provider only the monitor has (a token) are in remote: the
// child reaches them through the monitor. Signatures are left out: the
// only ones are host-key signatures, which the monitor makes for every
// process (ipc.Signer), so where they are served is the monitor's
// business. Other primitives of such providers (a key agreement or hash
// a token was chosen for) are left out too, with "primitive=provider" in
// away: the child serves them with its own providers.
func ChildPins(reg *provider.Registry) (pins, remote map[string]string, away []string) {
	pins, remote = map[string]string{}, map[string]string{}
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
			kind := chosenKind(ex)
			alg, _ := provider.Lookup(prim)
			switch {
			case alg != nil && alg.Family == provider.FamilySignature && kind == provider.KindHardware:
				// the monitor signs; a child never does
			case kind == provider.KindSoftware || kind == provider.KindCPU:
				pins[prim] = ex.Chosen
			case alg != nil && alg.Family == provider.FamilyAEAD:
				pins[prim], remote[prim] = ex.Chosen, ex.Chosen
			default:
				away = append(away, prim+"="+ex.Chosen)
			}
		}
	}
	return pins, remote, away
}

func chosenKind(ex *provider.Explanation) provider.Kind {
	for _, c := range ex.Candidates {
		if c.Provider == ex.Chosen {
			return c.Kind
		}
	}
	return provider.KindHardware
}
