package interop_test

import (
	"context"
	"crypto"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/transport"
)

// cell is one server configuration of the matrix (and, for the client
// rekey and RSA cells, what the client does differently).
type cell struct {
	name string // as shown in the table
	axis string // defaults, cipher, kex, hostkey, rekey, userkey
	// set restricts the server's offer; the other axes offer everything.
	set         func(c *sshd.Config)
	token       bool // host key in the SoftHSM token
	hostKeyAlg  string
	serverRekey bool
	clientRekey bool
	rsaUser     bool
}

// dataOnly: the cell is about transfers, so the remote command is left out.
func (c cell) dataOnly() bool { return c.serverRekey || c.clientRekey }

// handshakeOnly: the cell varies only the handshake, so one transfer (the
// client's first) is enough.
func (c cell) handshakeOnly() bool { return c.axis == "kex" || c.axis == "hostkey" }

// cells lists the matrix from the transport's own tables, so an algorithm
// added there gets its cells.
func cells() []cell {
	cs := []cell{{name: "defaults", axis: "defaults"}}
	for _, c := range transport.SupportedCiphers() {
		if strings.Contains(c, "gcm") || strings.Contains(c, "chacha") {
			cs = append(cs, cell{name: "cipher " + c, axis: "cipher", set: func(s *sshd.Config) { s.Ciphers = []string{c} }})
			continue
		}
		for _, m := range transport.SupportedMACs() {
			if !cipherCell(c, m) {
				continue
			}
			cs = append(cs, cell{name: "cipher " + c + " " + m, axis: "cipher", set: func(s *sshd.Config) {
				s.Ciphers, s.MACs = []string{c}, []string{m}
			}})
		}
	}
	for _, k := range transport.SupportedKex() {
		cs = append(cs, cell{name: "kex " + k, axis: "kex", set: func(s *sshd.Config) { s.KexAlgorithms = []string{k} }})
	}
	for _, token := range []bool{false, true} {
		where := "file"
		if token {
			where = "token"
		}
		for _, h := range transport.SupportedHostKeyAlgorithms() {
			if token && strings.Contains(h, "nistp521") {
				continue // the PKCS #11 provider holds no P-521 keys
			}
			cs = append(cs, cell{name: "hostkey " + h + " " + where, axis: "hostkey", token: token, hostKeyAlg: h,
				set: func(s *sshd.Config) { s.HostKeyAlgorithms = []string{h} }})
		}
	}
	cs = append(cs,
		cell{name: "rekey by server", axis: "rekey", serverRekey: true},
		cell{name: "rekey by client", axis: "rekey", clientRekey: true},
		cell{name: "user key rsa", axis: "userkey", rsaUser: true})
	return cs
}

// cipherCell keeps the cipher × MAC cells to what tells something: the
// CTR ciphers with every SHA-2 MAC, aes128-ctr with every other MAC (the
// legacy SHA-1, MD5 and UMAC ones), and the other ciphers (aes192-ctr,
// CBC) with one EtM and one encrypt-and-MAC MAC.
func cipherCell(c, m string) bool {
	sha2 := strings.HasPrefix(m, "hmac-sha2-")
	switch c {
	case "aes128-ctr":
		return true
	case "aes256-ctr":
		return sha2
	}
	return m == "hmac-sha2-256-etm@openssh.com" || m == "hmac-sha1"
}

// server is one running offload server for one client × cell, with its
// log kept as records.
type server struct {
	addr, port string
	hostPubs   []ssh.PublicKey
	log        *recorder
	accepted   *atomic.Int64 // connections accepted (the in-process server's)
}

// startServer starts offload's server for c in process on 127.0.0.1.
func (e *env) startServer(t *testing.T, c cell) *server {
	t.Helper()
	cfg := &sshd.Config{Registry: e.reg, HostKeys: e.fileKeys, CipherSelection: *selection}
	if c.axis != "defaults" {
		cfg.Ciphers, cfg.MACs = transport.SupportedCiphers(), transport.SupportedMACs()
		cfg.KexAlgorithms, cfg.HostKeyAlgorithms = transport.SupportedKex(), transport.SupportedHostKeyAlgorithms()
	}
	if c.set != nil {
		c.set(cfg)
	}
	if c.hostKeyAlg != "" {
		keys := e.fileKeys
		if c.token {
			if e.tokenReg == nil {
				missing(t, e.tokenErr)
			}
			cfg.Registry, keys = e.tokenReg, e.tokenKeys
		}
		k, err := keyFor(keys, c.hostKeyAlg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.HostKeys = []crypto.Signer{k}
		if strings.HasSuffix(c.hostKeyAlg, certSuffix) {
			cert, err := hostCert(k)
			if err != nil {
				t.Fatal(err)
			}
			cfg.HostCertificates = []*ssh.Certificate{cert}
		}
	}
	if c.serverRekey {
		cfg.RekeyLimit = rekeyBytes
	}
	cfg.Auth = &auth.Config{AuthorizedKeysFiles: []string{e.authKeys}, IgnoreFileModes: true}
	cfg.Conn = &connection.Config{SFTPHelper: e.sftpHelper}
	rec := &recorder{}
	cfg.Logger = slog.New(rec)
	srv, err := sshd.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: l.Addr().String(), log: rec, accepted: new(atomic.Int64)}
	_, s.port, _ = net.SplitHostPort(s.addr)
	for _, k := range cfg.HostKeys {
		pub, err := ssh.NewPublicKey(k.Public())
		if err != nil {
			t.Fatal(err)
		}
		s.hostPubs = append(s.hostPubs, pub)
	}
	go srv.Serve(countingListener{Listener: l, n: s.accepted})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return s
}

// countingListener counts the connections it accepts; they are the
// listener's own (*net.TCPConn), so the server reads and writes them as
// it does in production.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// settle waits until the server has logged the end of every connection
// of an op (from mark on), so that its records are complete: the end
// can come after the client has exited (a failed negotiation, the last
// re-exchange's line) on a loaded machine. The in-process server counts
// the connections it accepted; for the binary, every connection it
// logged from mark on must end, and an op that worked had one. Bounded
// by the test's startup deadline.
func (s *server) settle(t *testing.T, mark int, worked bool) {
	if s.log == nil {
		return
	}
	testenv.WaitUntil(t, func() bool {
		if s.accepted != nil {
			return int64(len(endedConns(s.log.since(0)))) >= s.accepted.Load()
		}
		recs := s.log.since(mark)
		seen, ended := map[string]bool{}, endedConns(recs)
		for _, r := range recs {
			if id := r.attrs["conn"]; id != "" {
				seen[id] = true
			}
		}
		for id := range seen {
			if !ended[id] {
				return false
			}
		}
		return len(seen) > 0 || !worked
	})
}

// endedConns are the connections among recs whose end is logged.
func endedConns(recs []record) map[string]bool {
	ended := map[string]bool{}
	for _, r := range recs {
		if id := r.attrs["conn"]; id != "" && isConnEnd(r) {
			ended[id] = true
		}
	}
	return ended
}

// isConnEnd: r is the last line of a connection (inproc's logEnd, the
// monitor's end line, or an admission refusal).
func isConnEnd(r record) bool {
	return r.attrs["phase"] != "" || r.msg == "monitor: connection ended" ||
		strings.HasPrefix(r.msg, "drop connection") || strings.HasPrefix(r.msg, "sshd: dropping connection")
}

// record is one log line of the server.
type record struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (r record) String() string {
	keys := make([]string, 0, len(r.attrs))
	for k := range r.attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.level, r.msg)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%q", k, r.attrs[k])
	}
	return b.String()
}

// recorder is a slog.Handler keeping every record.
type recorder struct {
	mu      sync.Mutex
	records []record
}

// recHandler is a recorder with attributes added by With.
type recHandler struct {
	r     *recorder
	attrs []slog.Attr
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(ctx context.Context, rec slog.Record) error {
	return recHandler{r: r}.Handle(ctx, rec)
}
func (r *recorder) WithAttrs(as []slog.Attr) slog.Handler { return recHandler{r: r, attrs: as} }
func (r *recorder) WithGroup(string) slog.Handler         { return r }

func (h recHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recHandler) WithGroup(string) slog.Handler            { return h }
func (h recHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return recHandler{r: h.r, attrs: append(slices.Clone(h.attrs), as...)}
}
func (h recHandler) Handle(_ context.Context, rec slog.Record) error {
	m := map[string]string{}
	for _, a := range h.attrs {
		m[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	h.r.mu.Lock()
	h.r.records = append(h.r.records, record{level: rec.Level, msg: strings.TrimSuffix(rec.Message, " [preauth]"), attrs: m})
	h.r.mu.Unlock()
	return nil
}

// mark returns a position to read records from.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.records)
}

// since returns the records from mark on.
func (r *recorder) since(mark int) []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.records[mark:])
}

// noCommon returns the server's "no common ..." error among recs: the
// client offered nothing the cell's server offers.
func noCommon(recs []record) string {
	for _, r := range recs {
		if err := r.attrs["err"]; strings.Contains(err, "no common") {
			return err
		}
	}
	return ""
}

// problems are the server's warnings and errors among recs, for a
// failure's detail.
func problems(recs []record) string {
	var b strings.Builder
	for _, r := range recs {
		// Refusals and OpenSSH-style "Failed ..." lines are logged below
		// Warn (a client trying its keys is routine) but say why.
		if r.level >= slog.LevelWarn || r.attrs["err"] != "" || r.attrs["why"] != "" || strings.HasPrefix(r.msg, "Failed ") {
			b.WriteString(r.String())
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// negotiated is the first key exchange among recs: kex, host key, cipher.
func negotiated(recs []record) string {
	for _, r := range recs {
		if r.msg == "transport: key exchange done" && r.attrs["n"] == "1" {
			return r.attrs["kex"] + ", " + r.attrs["host_key"] + ", " + r.attrs["cipher_in"]
		}
	}
	return ""
}

// rekeys counts, among recs, key re-exchanges the server started and
// those the client started (a re-exchange done without the server having
// started one on that connection).
func rekeys(recs []record) (byServer, byClient int) {
	started := map[string]int{}
	for _, r := range recs {
		remote := r.attrs["remote"]
		switch {
		case r.msg == "transport: starting key re-exchange":
			started[remote]++
			byServer++
		case r.msg == "transport: key exchange done" && r.attrs["n"] != "1":
			if started[remote] > 0 {
				started[remote]--
			} else {
				byClient++
			}
		}
	}
	return byServer, byClient
}
