package transport

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/provider"
)

// Config configures the server side of the transport. Nil algorithm
// lists take the defaults.
type Config struct {
	// Registry supplies every primitive; required.
	Registry *provider.Registry
	// HostKeys are the host keys (file keys, token keys). Either they or
	// HostPublicKeys must name at least one key.
	HostKeys []crypto.Signer
	// HostPublicKeys are host keys whose private halves live elsewhere
	// (another process): each connection is then given a HostKeySigner
	// in its ConnOptions. Used in addition to HostKeys.
	HostPublicKeys []ssh.PublicKey

	// Profile chooses the defaults of the nil lists below (ProfileDefault
	// when empty).
	Profile Profile

	Ciphers           []string // default: Profile.Defaults(KindCipher)
	MACs              []string // default: Profile.Defaults(KindMAC)
	KexAlgorithms     []string // default: Profile.Defaults(KindKex)
	HostKeyAlgorithms []string // default: Profile.Defaults(KindHostKey)
	// ServerSigAlgs is announced in EXT_INFO; default DefaultServerSigAlgs.
	ServerSigAlgs []string

	// CipherSelection is SelectionClient (the default: our KEXINIT goes
	// out at once and the client's order picks among every cipher we
	// list) or SelectionMeasured (our first KEXINIT waits for the
	// client's and lists only the accepted ciphers that measure fast
	// here; selection.go).
	CipherSelection string
	// CipherScores, when set, are the measured speeds SelectionMeasured
	// uses instead of asking the registry (a sandboxed process is given
	// the monitor's: Server.CipherScores).
	CipherScores map[string]float64

	// ModuliFile holds the groups of diffie-hellman-group-exchange-sha256
	// (moduli(5)); default DefaultModuliFile. Read by NewServer when that
	// exchange is offered; without the file the fixed groups serve.
	ModuliFile string

	// HostCertificates are OpenSSH host certificates of host keys (of
	// HostKeys or HostPublicKeys: the private key may live in a token),
	// offered with their -cert-v01@openssh.com algorithms.
	HostCertificates []*ssh.Certificate

	// HostBoundAuth announces publickey-hostbound@openssh.com in EXT_INFO:
	// set it only when user authentication verifies
	// publickey-hostbound-v00@openssh.com requests (Conn.InitialHostKey
	// is the host key they must name).
	HostBoundAuth bool

	// Version is the identification string; default DefaultVersion.
	Version string

	// RekeyBytes, when positive, caps the bytes sent or received under one
	// set of keys; the cipher's RFC 4344 limit applies otherwise.
	RekeyBytes uint64
	// RekeyInterval is the time between key exchanges; 0 means
	// DefaultRekeyInterval, negative means never.
	RekeyInterval time.Duration
	// KexTimeout bounds a key re-exchange: a peer that has not finished
	// one that long after our KEXINIT is disconnected (0: DefaultKexTimeout).
	// The first exchange is bounded by the caller's deadline.
	KexTimeout time.Duration

	// PipelineDepth is how many packets of a direction may be in flight
	// at once when its AEAD serves several calls at once (a token with
	// several sessions or units, provider.ConcurrentAEAD): 0 picks two
	// per lane the AEAD reports (at most 32), 1 turns pipelining off,
	// N > 1 is N (at most 32). Ciphers of software and CPU providers are
	// never pipelined.
	PipelineDepth int

	// Compression offers zlib@openssh.com beside none, as OpenSSH's
	// Compression yes (delayed: it starts after user authentication;
	// compress.go).
	Compression bool

	// Rand is the randomness for signatures and padding; default crypto/rand.
	Rand   io.Reader
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultKexTimeout    = 5 * time.Minute
	DefaultRekeyInterval = time.Hour
)

// Server holds the checked configuration shared by connections.
type Server struct {
	reg      *provider.Registry
	hostKeys []hostKey
	// allHostKeys is every host public key (wire format), announced with
	// hostkeys-00@openssh.com whether or not its algorithm is offered.
	allHostKeys [][]byte
	hostBound   bool
	signer      HostKeySigner // of HostKeys; nil when there are none
	offer       offer
	moduli      []modulus
	// selection is CipherSelection; scores the measured speed of each
	// offered cipher, for SelectionMeasured; kexInitWait how long it
	// waits for a kexInitFirst client's KEXINIT.
	selection   string
	scores      map[string]float64
	kexInitWait time.Duration
	sigAlgs     []string
	version     []byte
	rekeyB      uint64
	rekeyT      time.Duration
	pace        paceParams // the client's re-exchange allowance
	kexT        time.Duration
	pipeDepth   int
	comp        []string // compression_algorithms offered (compress.go)
	rand        io.Reader
	log         *slog.Logger
}

// offer is the server's algorithm lists.
type offer struct {
	kex, hostKeys, ciphers, macs []string
}

// NewServer checks cfg and prepares the host keys.
func NewServer(cfg *Config) (*Server, error) {
	if cfg.Registry == nil {
		return nil, errors.New("transport: Config.Registry is required")
	}
	s := &Server{reg: cfg.Registry, rekeyB: cfg.RekeyBytes, rand: cfg.Rand, log: cfg.Logger, pace: defaultPace}
	if s.rand == nil {
		s.rand = rand.Reader
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if err := s.setOffer(cfg); err != nil {
		return nil, err
	}
	if err := s.setHostKeys(cfg); err != nil {
		return nil, err
	}
	var err error
	s.offer.hostKeys = s.offer.hostKeys[:0]
	for _, hk := range s.hostKeys {
		s.offer.hostKeys = append(s.offer.hostKeys, hk.alg)
	}
	if s.selection, err = checkSelection(cfg.CipherSelection); err != nil {
		return nil, err
	}
	if s.selection == SelectionMeasured {
		s.kexInitWait = kexInitWait
		s.scores = cfg.CipherScores
		if s.scores == nil {
			s.scores = cipherScores(s.reg, s.offer.ciphers)
			s.log.Info("transport: cipher scores, measured at start", "scores", s.scoreList())
		}
	}
	if err := s.loadModuli(cfg); err != nil {
		return nil, err
	}
	if s.version, err = versionLine(or(cfg.Version, DefaultVersion)); err != nil {
		return nil, err
	}
	s.sigAlgs = orList(cfg.ServerSigAlgs, DefaultServerSigAlgs)
	s.hostBound = cfg.HostBoundAuth
	s.rekeyT = cfg.RekeyInterval
	s.kexT = cfg.KexTimeout
	if s.kexT <= 0 {
		s.kexT = DefaultKexTimeout
	}
	if s.rekeyT == 0 {
		s.rekeyT = DefaultRekeyInterval
	}
	if cfg.PipelineDepth < 0 {
		return nil, fmt.Errorf("transport: PipelineDepth %d: want 0 (by the AEAD's lanes), 1 (off) or more", cfg.PipelineDepth)
	}
	s.pipeDepth = cfg.PipelineDepth
	s.comp = compressionOffer(cfg.Compression)
	return s, nil
}

func (s *Server) setHostKeys(cfg *Config) error {
	pubs := slices.Clone(cfg.HostPublicKeys)
	if len(cfg.HostKeys) > 0 {
		signer, own, err := NewHostKeySigner(cfg.HostKeys, s.rand)
		if err != nil {
			return err
		}
		s.signer, pubs = signer, append(own, pubs...)
	}
	for _, p := range pubs {
		if !slices.ContainsFunc(s.allHostKeys, func(q []byte) bool { return bytes.Equal(q, p.Marshal()) }) {
			s.allHostKeys = append(s.allHostKeys, p.Marshal())
		}
	}
	if err := checkHostCertificates(cfg.HostCertificates, pubs); err != nil {
		return err
	}
	var err error
	s.hostKeys, err = newHostKeys(pubs, cfg.HostCertificates, s.offer.hostKeys)
	return err
}

func (s *Server) setOffer(cfg *Config) error {
	prof, err := ParseProfile(string(cfg.Profile))
	if err != nil {
		return err
	}
	s.offer = offer{
		kex:      orList(cfg.KexAlgorithms, prof.Defaults(KindKex)),
		hostKeys: orList(cfg.HostKeyAlgorithms, prof.Defaults(KindHostKey)),
		ciphers:  orList(cfg.Ciphers, prof.Defaults(KindCipher)),
		macs:     orList(cfg.MACs, prof.Defaults(KindMAC)),
	}
	checks := []struct {
		what  string
		names []string
		known func(string) bool
	}{
		{"key exchange", s.offer.kex, func(n string) bool { return findKex(n) != nil }},
		{"host key algorithm", s.offer.hostKeys, func(n string) bool { return findHostKey(n) != nil }},
		{"cipher", s.offer.ciphers, func(n string) bool { return findCipher(n) != nil }},
		{"MAC", s.offer.macs, func(n string) bool { return findMAC(n) != nil }},
	}
	for _, c := range checks {
		if len(c.names) == 0 {
			return fmt.Errorf("transport: empty %s list", c.what)
		}
		for _, n := range c.names {
			if !c.known(n) {
				return fmt.Errorf("transport: unknown %s %q", c.what, n)
			}
		}
	}
	return s.dropUnavailable()
}

// dropUnavailable removes from the offer the algorithms whose registry
// primitives no provider may serve (denied, or excluded by the policy),
// so that a client is never offered what the server cannot build.
func (s *Server) dropUnavailable() error {
	lists := []struct {
		what  string
		names *[]string
		needs func(string) []string
	}{
		{"key exchange", &s.offer.kex, func(n string) []string { return findKex(n).primitives() }},
		{"cipher", &s.offer.ciphers, func(n string) []string { return findCipher(n).primitives() }},
		{"MAC", &s.offer.macs, func(n string) []string { return findMAC(n).primitives() }},
	}
	for _, l := range lists {
		*l.names = slices.DeleteFunc(*l.names, func(n string) bool {
			err := s.servable(l.needs(n))
			if err != nil {
				s.log.Warn("transport: not offering an algorithm no provider can serve", "algorithm", n, "err", err)
			}
			return err != nil
		})
		if len(*l.names) == 0 {
			return fmt.Errorf("transport: no %s can be served by the registry's providers", l.what)
		}
	}
	return nil
}

func (s *Server) servable(algs []string) error {
	for _, a := range algs {
		if _, err := s.reg.Explain(a); err != nil {
			return err
		}
	}
	return nil
}

// Offer returns the algorithm lists the server sends, for logs and
// `sshd -T`.
func (s *Server) Offer() (kex, hostKeys, ciphers, macs []string) {
	return slices.Clone(s.offer.kex), slices.Clone(s.offer.hostKeys), slices.Clone(s.offer.ciphers), slices.Clone(s.offer.macs)
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func orList(v, def []string) []string {
	if len(v) == 0 {
		return slices.Clone(def)
	}
	return slices.Clone(v)
}

// rekeyLimit is the byte limit for keys of cs: RFC 4344 §3.2 suggests
// 2^(L/4) blocks of L bits; like OpenSSH, ciphers with small blocks get
// 1 GiB. A configured limit lowers it.
func (s *Server) rekeyLimit(cs *cipherSpec) uint64 {
	limit := uint64(1) << 30
	if cs.rekeyBlock >= 16 {
		limit = (uint64(1) << (cs.rekeyBlock * 2)) * uint64(cs.rekeyBlock)
	}
	if s.rekeyB > 0 && s.rekeyB < limit {
		limit = s.rekeyB
	}
	return limit
}

// loadModuli reads the moduli file when group exchange is offered;
// unusable lines are logged and skipped, as OpenSSH skips them.
func (s *Server) loadModuli(cfg *Config) error {
	if !slices.ContainsFunc(s.offer.kex, func(n string) bool { return findKex(n).method == gexMethod }) {
		return nil
	}
	path := or(cfg.ModuliFile, DefaultModuliFile)
	groups, bad, err := loadModuli(path)
	if err != nil {
		// A sandboxed process cannot read it (the monitor must pass the
		// groups); OpenSSH too falls back to the fixed groups.
		s.log.Warn("transport: cannot read the moduli file; group exchange uses the fixed groups", "file", path, "err", err)
		return nil
	}
	for _, e := range bad {
		s.log.Warn("transport: skipping a moduli line", "file", path, "err", e)
	}
	if len(groups) == 0 {
		s.log.Info("transport: no usable group in the moduli file; group exchange uses the fixed groups", "file", path)
	}
	s.moduli = groups
	return nil
}

// CipherScores returns the measured speed of each offered cipher that a
// SelectionMeasured server steers by (nil otherwise), to hand to another
// process's Config.CipherScores.
func (s *Server) CipherScores() map[string]float64 { return maps.Clone(s.scores) }

// CipherSelectionSummary says in a line how this server picks ciphers
// (for sshd -T): the client's order, or the measured scores a steer
// compares and the gain it needs.
func (s *Server) CipherSelectionSummary() string {
	if s.selection != SelectionMeasured {
		return "client: the client's order picks the cipher"
	}
	// The scores are measured at each start: they are in the log line
	// "transport: cipher scores", not here, so that -T prints the same
	// configuration every time (OpenSSH's regress cfgparse re-reads it).
	return fmt.Sprintf("measured: steers a client to a cipher scored over %.1fx its own choice (the scores: the start's log line 'transport: cipher scores')",
		noiseMargin)
}

// scoreList is "cipher score, ..." in the offer's order.
func (s *Server) scoreList() string {
	parts := make([]string, 0, len(s.offer.ciphers))
	for _, c := range s.offer.ciphers {
		parts = append(parts, fmt.Sprintf("%s %.0f", c, s.scores[c]))
	}
	return strings.Join(parts, ", ")
}
