package plan

import (
	"crypto"
	"fmt"
	"log/slog"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/remote"
	"github.com/offload/offload/sshd/transport"
)

// Build makes the transport.Config and registry of a child of stage s:
// the registry has the providers the stage's assignments name (software
// always, as the fail-open fallback), each primitive pinned to its
// planned provider; a primitive planned in the monitor is reached through
// peer. Keys held by the monitor are public keys only. Close the registry
// when done.
func (p *Plan) Build(s Stage, peer *ipc.Peer, log *slog.Logger, metrics *provider.Metrics) (*transport.Config, *provider.Registry, error) {
	reg, err := p.Registry(s, peer, log, metrics)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := p.TransportConfig(reg, nil, log)
	if err != nil {
		reg.Close()
		return nil, nil, err
	}
	return cfg, reg, nil
}

// TransportConfig is the one constructor of a transport.Config: p's
// algorithm lists and transport settings, with the primitives from reg
// (a child's, from Registry; the monitor's own in a server that runs in
// one process) and the host keys hostKeys (the signers, in the process
// that holds them) and p.HostPublicKeys (keys whose signatures the
// monitor makes).
func (p *Plan) TransportConfig(reg *provider.Registry, hostKeys []crypto.Signer, log *slog.Logger) (*transport.Config, error) {
	cfg := &transport.Config{
		Registry: reg, HostKeys: hostKeys,
		Ciphers: p.Ciphers, MACs: p.MACs, KexAlgorithms: p.KexAlgorithms,
		HostKeyAlgorithms: p.HostKeyAlgorithms, ServerSigAlgs: p.ServerSigAlgs, Version: p.Version,
		RekeyBytes: p.RekeyBytes, RekeyInterval: p.RekeyInterval, KexTimeout: p.KexTimeout, Logger: log,
		CipherSelection: p.CipherSelection, CipherScores: p.CipherScores, ModuliFile: p.ModuliFile,
		Compression:   p.Compression,
		HostBoundAuth: true, // the monitor's auth.Authority verifies host-bound requests
	}
	var err error
	if cfg.HostCertificates, err = parseCerts(p.HostCertificates); err == nil {
		cfg.HostPublicKeys, err = parseKeys(p.HostPublicKeys)
	}
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

func parseCerts(blobs [][]byte) ([]*ssh.Certificate, error) {
	var out []*ssh.Certificate
	for i, b := range blobs {
		pub, err := ssh.ParsePublicKey(b)
		cert, ok := pub.(*ssh.Certificate)
		if err != nil || !ok {
			return nil, fmt.Errorf("plan: host certificate %d: not a certificate (%v)", i, err)
		}
		out = append(out, cert)
	}
	return out, nil
}

func parseKeys(blobs [][]byte) ([]ssh.PublicKey, error) {
	var out []ssh.PublicKey
	for i, b := range blobs {
		pub, err := ssh.ParsePublicKey(b)
		if err != nil {
			return nil, fmt.Errorf("plan: host key %d: %w", i, err)
		}
		out = append(out, pub)
	}
	return out, nil
}

// Registry builds the registry of a child of stage s (see Build). With a
// nil peer the primitives planned in the monitor cannot be made, only
// explained.
func (p *Plan) Registry(s Stage, peer *ipc.Peer, log *slog.Logger, metrics *provider.Metrics) (*provider.Registry, error) {
	mode, err := provider.ParseMode(p.Mode)
	if p.Mode == "" {
		mode, err = provider.ModeFastest, nil
	}
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reg := provider.New(provider.Config{Metrics: metrics, Logger: log})
	pins := map[string]string{}
	for _, pr := range p.providers(s, peer, pins) {
		if err := reg.Register(pr); err != nil {
			reg.Close()
			return nil, fmt.Errorf("plan: %w", err)
		}
	}
	// The pins name the providers just registered: set them now, so that
	// they are checked against them.
	if err := reg.SetPolicy(provider.Policy{Mode: mode, Pins: pins}); err != nil {
		reg.Close()
		return nil, fmt.Errorf("plan: %w", err)
	}
	return reg, nil
}

// providers are the providers stage s names, filling pins: the remote
// stand-ins of the monitor's, cpu when named, and software.
func (p *Plan) providers(s Stage, peer *ipc.Peer, pins map[string]string) []provider.Provider {
	remotes := map[string]*remote.Provider{}
	var out []provider.Provider
	useCPU := false
	for _, a := range p.Assignments(s) {
		switch {
		case a.Where == InChild:
			pins[a.Primitive] = a.Provider
			useCPU = useCPU || a.Provider == cpu.Name
		case isAEAD(a.Primitive):
			rp := remotes[a.Provider]
			if rp == nil {
				rp = &remote.Provider{Peer: peer, ProvName: a.Provider}
				remotes[a.Provider] = rp
				out = append(out, rp)
			}
			rp.Algorithms = append(rp.Algorithms, a.Primitive)
			pins[a.Primitive] = a.Provider
		}
	}
	if useCPU || len(p.Assignments(s)) == 0 {
		out = append(out, cpu.New(cpu.Detect()))
	}
	return append(out, software.New())
}
