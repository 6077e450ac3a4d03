//go:build cgo && !nopkcs11

package pipeline

import (
	"bufio"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/pkcs11faults"
	"github.com/offload/offload/internal/softhsm"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/uri"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/monitor"
	sshdremote "github.com/offload/offload/sshd/remote"
	"github.com/offload/offload/sshd/transport"
	"github.com/offload/offload/sshd/wire"
)

// tokens is a PKCS #11 provider over fresh SoftHSM tokens, with a fault
// injector for latency.
type tokens struct {
	p      *pkcs11.Provider
	faults *pkcs11faults.Injector
	delay  pkcs11faults.ID
}

var tokenSeq struct {
	sync.Mutex
	n int
}

// openTokens makes n tokens and a provider over them whose AEADs take up
// to lanes sessions.
func openTokens(tb testing.TB, n, lanes int) *tokens {
	tb.Helper()
	return openTokensWith(tb, n, pkcs11.Config{AEADLanes: lanes})
}

// openTokensWith is openTokens with more of the provider's settings.
func openTokensWith(tb testing.TB, n int, cfg pkcs11.Config) *tokens {
	tb.Helper()
	var sels []*uri.URI
	var first *softhsm.Token
	for range n {
		tokenSeq.Lock()
		tokenSeq.n++
		label := fmt.Sprintf("pipe%d", tokenSeq.n)
		tokenSeq.Unlock()
		tok := softhsm.NewToken(tb, softhsm.WithLabel(label))
		if first == nil {
			first = tok
		}
		sels = append(sels, &uri.URI{Token: label})
	}
	t := &tokens{faults: &pkcs11faults.Injector{}}
	var err error
	cfg.ModulePath, cfg.PINSource, cfg.Tokens = first.Module, first.PINFile, sels
	cfg.MaxSessions, cfg.HealthInterval, cfg.Faults = 16, -1, t.faults
	t.p, err = pkcs11.Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { t.p.Close() })
	return t
}

// setDelay makes every C_Encrypt and C_Decrypt take d longer (0: none).
func (t *tokens) setDelay(tb testing.TB, d time.Duration) {
	tb.Helper()
	if t.delay != 0 {
		t.faults.Remove(t.delay)
		t.delay = 0
	}
	if d == 0 {
		return
	}
	id, err := t.faults.Inject(pkcs11faults.Fault{Calls: []string{"Encrypt", "Decrypt"}, Delay: d})
	if err != nil {
		tb.Fatal(err)
	}
	t.delay = id
}

// registry is the CPU, PKCS #11 and software providers with AES-GCM
// pinned to the tokens, as ProviderMap aes128-gcm=pkcs11 does.
func (t *tokens) registry(tb testing.TB) *provider.Registry {
	tb.Helper()
	return pinnedRegistry(tb, t.p, pkcs11.DefaultName)
}

func pinnedRegistry(tb testing.TB, p provider.Provider, name string) *provider.Registry {
	tb.Helper()
	reg := provider.New(provider.Config{})
	tb.Cleanup(func() { reg.Close() })
	for _, pr := range []provider.Provider{cpu.New(cpu.Detect()), p, software.New()} {
		if err := reg.Register(pr); err != nil {
			tb.Fatal(err)
		}
	}
	pins, err := provider.ParsePins("aes128-gcm=" + name + " aes256-gcm=" + name)
	if err == nil {
		err = reg.SetPolicy(provider.Policy{Mode: provider.ModePreferHardware, Pins: pins})
	}
	if err != nil {
		tb.Fatal(err)
	}
	return reg
}

// throughMonitor returns a registry as a post-auth process has it: its
// AES-GCM is served by monitorReg on the other end of a socket pair, one
// request per packet, by the monitor's AEADServer.
func throughMonitor(tb testing.TB, monitorReg *provider.Registry) *provider.Registry {
	tb.Helper()
	srv := &monitor.AEADServer{Registry: monitorReg, Remote: map[string]string{"aes128-gcm": pkcs11.DefaultName, "aes256-gcm": pkcs11.DefaultName}}
	parent, child, err := ipc.Pair()
	if err != nil {
		tb.Fatal(err)
	}
	var mon *ipc.Peer
	mon, err = ipc.NewPeer(parent, func(m *ipc.Message) {
		switch m.Type {
		case ipc.TypeAEADNew, ipc.TypeAEADSeal, ipc.TypeAEADOpen:
			go func() { // the monitor serves each request on a goroutine
				var out []byte
				var err error
				if m.Type == ipc.TypeAEADNew {
					out, err = srv.New(m.Payload)
				} else {
					out, err = srv.Call(m.Type, m.Payload)
				}
				mon.Reply(m, out, err)
			}()
		case ipc.TypeAEADClose:
			srv.Close(m.Payload)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	proc, err := ipc.NewPeer(child, func(*ipc.Message) {})
	if err != nil {
		tb.Fatal(err)
	}
	go mon.Run()
	go proc.Run()
	tb.Cleanup(func() {
		proc.Close()
		mon.Close()
		srv.CloseAll()
	})
	rp := &sshdremote.Provider{Peer: proc, ProvName: pkcs11.DefaultName, Algorithms: []string{"aes128-gcm", "aes256-gcm"}}
	return pinnedRegistry(tb, rp, pkcs11.DefaultName)
}

// server is a transport server with a minimal upper layer: "none"
// authentication, then global requests: data (hashed), sum (the SHA-256
// of the data so far), pull (n bytes sent back as data requests, then
// "end" with their SHA-256).
type server struct {
	srv *transport.Server
	l   net.Listener
	wg  sync.WaitGroup
	mu  sync.Mutex
	cs  []*transport.Conn
}

func startServer(tb testing.TB, reg *provider.Registry, depth int) *server {
	tb.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	srv, err := transport.NewServer(&transport.Config{Registry: reg, HostKeys: []crypto.Signer{key}, PipelineDepth: depth})
	if err != nil {
		tb.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &server{srv: srv, l: l}
	s.wg.Add(1)
	go s.accept()
	tb.Cleanup(s.close)
	return s
}

func (s *server) close() {
	s.l.Close()
	s.mu.Lock()
	for _, c := range s.cs {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.l.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c, err := s.srv.Handshake(nc)
			if err != nil {
				return
			}
			s.mu.Lock()
			s.cs = append(s.cs, c)
			s.mu.Unlock()
			defer c.Close()
			serveUpper(c)
		}()
	}
}

func serveUpper(c *transport.Conn) error {
	h := sha256.New()
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return err
		}
		r := wire.NewReader(p)
		switch r.Byte("msg") {
		case wire.MsgServiceRequest:
			err = c.WritePacket(wire.AppendString([]byte{wire.MsgServiceAccept}, r.String("service")))
		case wire.MsgUserAuthRequest:
			err = c.WritePacket([]byte{wire.MsgUserAuthSuccess})
		case wire.MsgGlobalRequest:
			err = request(c, r, h)
		}
		if err != nil {
			return err
		}
	}
}

func request(c *transport.Conn, r *wire.Reader, h hash.Hash) error {
	name := r.String("name")
	r.Bool("want reply")
	data := r.Rest()
	switch name {
	case "data":
		h.Write(data)
	case "sum":
		sum := h.Sum(nil)
		h.Reset()
		return c.WritePacket(append([]byte{wire.MsgRequestSuccess}, sum...))
	case "pull":
		go pull(c, wire.NewReader(data).Uint64("n"))
	}
	return nil
}

// pull sends n pseudo-random bytes as data requests and an "end" with
// their SHA-256.
func pull(c *transport.Conn, n uint64) {
	h := sha256.New()
	buf := make([]byte, 32<<10)
	rand.Read(buf)
	p := make([]byte, 0, 64<<10)
	for n > 0 {
		k := min(uint64(len(buf)), n)
		buf[0]++
		h.Write(buf[:k])
		p = wire.AppendString(append(p[:0], wire.MsgGlobalRequest), "data")
		p = append(wire.AppendBool(p, false), buf[:k]...)
		if c.WritePacket(p) != nil {
			return
		}
		n -= k
	}
	p = wire.AppendString(append(p[:0], wire.MsgGlobalRequest), "end")
	c.WritePacket(append(wire.AppendBool(p, false), h.Sum(nil)...))
}

// client is one x/crypto/ssh connection to a server.
type client struct {
	cl   *ssh.Client
	reqs <-chan *ssh.Request
	buf  []byte
}

// dialClient connects to addr with cipher.
func dialClient(addr, cipher string) (*client, error) {
	cfg := &ssh.ClientConfig{User: "bench", HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 20 * time.Second,
		Config: ssh.Config{Ciphers: []string{cipher}}}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	cc, chans, reqs, err := ssh.NewClientConn(nc, addr, cfg)
	if err != nil {
		return nil, err
	}
	c := &client{cl: ssh.NewClient(cc, chans, nil), reqs: reqs, buf: make([]byte, 32<<10)}
	rand.Read(c.buf)
	return c, nil
}

func (s *server) dial(tb testing.TB, cipher string) *client {
	tb.Helper()
	c, err := dialClient(s.l.Addr().String(), cipher)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.cl.Close() })
	return c
}

// push uploads n bytes in 32 KiB requests and checks the server's sum.
func (c *client) push(n int) error {
	h := sha256.New()
	for n > 0 {
		k := min(len(c.buf), n)
		c.buf[0]++
		h.Write(c.buf[:k])
		if _, _, err := c.cl.SendRequest("data", false, c.buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	ok, sum, err := c.cl.SendRequest("sum", true, nil)
	if err != nil || !ok {
		return fmt.Errorf("sum: ok=%v err=%v", ok, err)
	}
	if string(sum) != string(h.Sum(nil)) {
		return fmt.Errorf("the server's SHA-256 of the upload differs")
	}
	return nil
}

// pull asks for n bytes and checks them against the server's SHA-256.
func (c *client) pull(n uint64) error {
	if _, _, err := c.cl.SendRequest("pull", false, wire.AppendUint64(nil, n)); err != nil {
		return err
	}
	h := sha256.New()
	var got uint64
	for req := range c.reqs {
		switch req.Type {
		case "data":
			h.Write(req.Payload)
			got += uint64(len(req.Payload))
		case "end":
			if got != n || string(req.Payload) != string(h.Sum(nil)) {
				return fmt.Errorf("download: %d of %d bytes, SHA-256 match %v", got, n, string(req.Payload) == string(h.Sum(nil)))
			}
			return nil
		}
	}
	return fmt.Errorf("connection closed during the download")
}

// do runs "upload" or "download" of n bytes.
func (c *client) do(dir string, n int) error {
	if dir == "upload" {
		return c.push(n)
	}
	return c.pull(uint64(n))
}

// The benchmarks' client runs in a process of its own (this test binary
// again), so that its crypto does not take the server's cores, as a
// remote client would not: it dials the address in clientEnv and runs
// "upload N" and "download N" lines from stdin, answering "ok" or the
// error.
const clientEnv = "OFFLOAD_PIPELINE_CLIENT"

func TestMain(m *testing.M) {
	if addr := os.Getenv(clientEnv); addr != "" {
		os.Exit(clientMain(addr))
	}
	os.Exit(m.Run())
}

func clientMain(addr string) int {
	c, err := dialClient(addr, gcm)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer c.cl.Close()
	fmt.Println("ok")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var dir string
		var n int
		if _, err := fmt.Sscan(sc.Text(), &dir, &n); err != nil {
			fmt.Println("error", err)
			continue
		}
		if err := c.do(dir, n); err != nil {
			fmt.Println("error", err)
			continue
		}
		fmt.Println("ok")
	}
	return 0
}

// remote is a client process.
type remote struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func (s *server) dialRemote(tb testing.TB) *remote {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), clientEnv+"="+s.l.Addr().String())
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	r := &remote{cmd: cmd, in: in, out: bufio.NewScanner(outp)}
	tb.Cleanup(r.close)
	if err := r.answer(); err != nil {
		tb.Fatal(err)
	}
	return r
}

func (r *remote) answer() error {
	if !r.out.Scan() {
		return fmt.Errorf("client process ended: %v", r.out.Err())
	}
	if line := r.out.Text(); line != "ok" {
		return fmt.Errorf("client: %s", line)
	}
	return nil
}

func (r *remote) do(dir string, n int) error {
	if _, err := fmt.Fprintln(r.in, dir, n); err != nil {
		return err
	}
	return r.answer()
}

func (r *remote) close() {
	r.in.Close()
	r.cmd.Wait()
}
