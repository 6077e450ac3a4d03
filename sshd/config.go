package sshd

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/login"
	"github.com/offload/offload/sshd/penalty"
	"github.com/offload/offload/sshd/plan"
	"github.com/offload/offload/sshd/transport"
)

// DefaultMaxStartups is the default Config.MaxStartups. (LoginGraceTime's
// default is auth.DefaultLoginGraceTime.)
const DefaultMaxStartups = 10

// Config configures a Server. The zero value is useful (see the package
// documentation); a Config must not be modified after NewServer.
type Config struct {
	// Registry supplies every primitive; nil means the software and CPU
	// providers with policy "fastest".
	Registry *provider.Registry
	// HostKeys are the host keys, usually from Registry.Signer (files or
	// pkcs11: URIs); nil means one ephemeral Ed25519 key.
	HostKeys []crypto.Signer

	// Algorithm lists as in sshd_config; nil means the defaults of
	// sshd/transport's CryptoProfile (transport.ProfileDefault when empty).
	Ciphers, MACs, KexAlgorithms, HostKeyAlgorithms []string
	CryptoProfile                                   transport.Profile
	// HostCertificates are host certificates of HostKeys (or of keys a
	// HostKeySigner holds), offered with their -cert-v01 algorithms.
	HostCertificates []*ssh.Certificate
	// CipherSelection is transport.SelectionClient (default) or
	// transport.SelectionMeasured.
	CipherSelection string
	// ModuliFile holds the groups of diffie-hellman-group-exchange-sha256
	// (default transport.DefaultModuliFile).
	ModuliFile string
	// Compression offers zlib@openssh.com, started after user
	// authentication (transport.Config.Compression; OpenSSH's
	// Compression yes). Off unless set.
	Compression bool

	// RekeyLimit caps the bytes under one set of keys (0: the cipher's
	// limit); RekeyInterval is the time between key exchanges (0:
	// transport.DefaultRekeyInterval, negative: never).
	RekeyLimit    uint64
	RekeyInterval time.Duration
	// KexTimeout bounds a key re-exchange (0: transport.DefaultKexTimeout).
	KexTimeout time.Duration

	// LoginGraceTime bounds the handshake and user authentication (0:
	// auth.DefaultLoginGraceTime, negative: no limit).
	LoginGraceTime time.Duration
	// MaxStartups bounds connections not yet authenticated; more are
	// dropped (0: DefaultMaxStartups, negative: no limit).
	MaxStartups int
	// DropStartup, when set, is asked about each new connection with the
	// number of connections already waiting to authenticate, and drops it
	// when it returns true: sshd's random early drop ("start:rate:full")
	// plugs in here. MaxStartups still applies as a hard limit.
	DropStartup func(pending int) bool

	// Penalties, when set, refuses connections from sources it has
	// penalised (PerSourcePenalties, PerSourceMaxStartups) and is told how
	// each connection ended; nil applies none. In-process mode only.
	Penalties *penalty.Tracker

	// Version is the identification string (default transport.DefaultVersion).
	Version string

	// Auth is the user authentication policy (nil: auth's defaults). When
	// the server does not run as root, OnlyUser defaults to the running
	// user.
	Auth *auth.Config
	// Conn configures the connection protocol (nil: its defaults).
	Conn *connection.Config
	// PerConnection, when set, is asked for the settings of each
	// connection once the user of its first authentication request is
	// known (sshd_config's Match); its Auth and Conn replace the fields
	// above for that connection. An error refuses the connection.
	PerConnection func(ConnInfo) (*ConnSettings, error)

	// NoLoginRecords turns off the login records (utmp, wtmp, lastlog) a
	// root server writes for pty sessions, as OpenSSH does.
	NoLoginRecords bool

	// Separation, when set, runs the server as separate processes
	// (privilege separation): see the package documentation. Nil serves
	// everything in this process.
	Separation *Separation

	// Logger receives one line per connection event; nil discards.
	Logger *slog.Logger
}

// ConnInfo is what the settings of a connection may depend on (the
// criteria of sshd_config's Match): the user of the first authentication
// request and the connection's endpoints.
type ConnInfo = login.ConnInfo

// ConnSettings are the settings of one connection that
// Config.PerConnection may change; a nil field keeps the Server's.
type ConnSettings = login.ConnSettings

// ErrRefuseConnection is what Config.PerConnection wraps in its error to
// refuse a connection by configuration (RefuseConnection): the login
// ends, and the source gets the refuseconnection penalty.
var ErrRefuseConnection = login.ErrRefuseConnection

// settings is a Config with defaults applied.
type settings struct {
	Config
	log    *slog.Logger
	logins *login.Config // what the connections' logins share
}

func (c *Config) settings() (*settings, error) {
	s := &settings{Config: *c, log: c.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.Registry == nil {
		reg, err := defaultRegistry(s.log)
		if err != nil {
			return nil, err
		}
		s.Registry = reg
	}
	if len(s.HostKeys) == 0 {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("sshd: ephemeral host key: %w", err)
		}
		s.log.Warn("sshd: no host key configured, using an ephemeral Ed25519 key")
		s.HostKeys = []crypto.Signer{k}
	}
	if s.LoginGraceTime == 0 {
		s.LoginGraceTime = auth.DefaultLoginGraceTime
	}
	s.Auth = s.authDefaults(s.Auth)
	s.Conn = s.connDefaults(s.Conn)
	if s.MaxStartups == 0 {
		s.MaxStartups = DefaultMaxStartups
	}
	s.logins = s.loginConfig()
	return s, nil
}

// loginConfig is what the connections' logins share: the server's
// settings, and Config.PerConnection with its answers completed as the
// server's are (authDefaults, connDefaults).
func (s *settings) loginConfig() *login.Config {
	lc := &login.Config{Auth: s.Auth, Conn: s.Conn, Logger: s.log}
	if f := s.PerConnection; f != nil {
		lc.PerConnection = func(ci ConnInfo) (*ConnSettings, error) {
			cs, err := f(ci)
			if err != nil || cs == nil {
				return cs, err
			}
			out := ConnSettings{Auth: cs.Auth, Conn: cs.Conn}
			if out.Auth != nil {
				out.Auth = s.authDefaults(out.Auth)
			}
			if out.Conn != nil {
				out.Conn = s.connDefaults(out.Conn)
			}
			return &out, nil
		}
	}
	return lc
}

func defaultRegistry(log *slog.Logger) (*provider.Registry, error) {
	reg := provider.New(provider.Config{Logger: log})
	for _, p := range []provider.Provider{cpu.New(cpu.Detect()), software.New()} {
		if err := reg.Register(p); err != nil {
			return nil, fmt.Errorf("sshd: %w", err)
		}
	}
	return reg, nil
}

// configuredPlan is the plan as configured, before the transport server
// resolves it: the algorithm lists (the CryptoProfile's defaults for
// those not set) and the transport settings. Its transport.Config comes
// from the one constructor, Plan.TransportConfig.
func (s *settings) configuredPlan() (*plan.Plan, error) {
	prof, err := transport.ParseProfile(string(s.CryptoProfile))
	if err != nil {
		return nil, fmt.Errorf("sshd: %w", err)
	}
	return &plan.Plan{
		Ciphers: orDefaults(s.Ciphers, prof, transport.KindCipher), MACs: orDefaults(s.MACs, prof, transport.KindMAC),
		KexAlgorithms:     orDefaults(s.KexAlgorithms, prof, transport.KindKex),
		HostKeyAlgorithms: orDefaults(s.HostKeyAlgorithms, prof, transport.KindHostKey),
		ServerSigAlgs:     serverSigAlgs(s.Auth), Version: s.Version, RekeyBytes: s.RekeyLimit,
		RekeyInterval: s.RekeyInterval, KexTimeout: s.KexTimeout,
		HostCertificates: marshalCerts(s.HostCertificates), CipherSelection: s.CipherSelection,
		ModuliFile: s.ModuliFile, Compression: s.Compression,
	}, nil
}

// orDefaults is names, or prof's defaults of kind when it is empty.
func orDefaults(names []string, prof transport.Profile, kind transport.AlgorithmKind) []string {
	if len(names) == 0 {
		return prof.Defaults(kind)
	}
	return names
}

// resolvePlan fills p with what the transport server tr built from it
// settled on: the algorithms it offers (those the registry can serve;
// the host-key algorithms of the keys it has) and the cipher scores it
// measured. Built from the result again, a transport server offers the
// same (TestResolvedPlanIsFixed).
func resolvePlan(p *plan.Plan, tr *transport.Server) {
	p.KexAlgorithms, p.HostKeyAlgorithms, p.Ciphers, p.MACs = tr.Offer()
	p.CipherScores = tr.CipherScores()
}

// serverSigAlgs are the plain (non-certificate) public key algorithms
// auth accepts, for EXT_INFO server-sig-algs.
func serverSigAlgs(a *auth.Config) []string {
	algs := auth.DefaultPublicKeyAlgorithms
	if a != nil && len(a.PublicKeyAlgorithms) > 0 {
		algs = a.PublicKeyAlgorithms
	}
	var out []string
	for _, n := range algs {
		if !isCertAlgo(n) {
			out = append(out, n)
		}
	}
	return out
}

func isCertAlgo(n string) bool {
	const suffix = "-cert-v01@openssh.com"
	return len(n) > len(suffix) && n[len(n)-len(suffix):] == suffix
}
