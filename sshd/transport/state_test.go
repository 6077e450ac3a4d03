package transport

import (
	"bytes"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/offload/offload/sshd/wire"
)

// handoverServer runs the test upper layer until the client sends the
// global request "handover"; it then exports the connection, resumes it
// on a second Server (as the post-auth process would, on its own copy of
// the socket) and serves the rest there.
type handoverServer struct {
	*testServer
	second *Server
	states chan *State
}

func newHandoverServer(t *testing.T, cfg *Config, second *Config, opts ...func(*Server)) *handoverServer {
	ts := newTestServer(t, cfg, opts...)
	if second.Registry == nil {
		second.Registry = testRegistry(t)
	}
	if second.HostKeys == nil {
		second.HostKeys = allHostKeys(t)
	}
	srv2, err := NewServer(second)
	if err != nil {
		t.Fatal(err)
	}
	hs := &handoverServer{testServer: ts, second: srv2, states: make(chan *State, 1)}
	ts.l.Close() // replace the accept loop
	ts.wg.Wait()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.l = l
	ts.wg.Add(1)
	go hs.accept()
	return hs
}

func (hs *handoverServer) accept() {
	defer hs.wg.Done()
	for {
		nc, err := hs.l.Accept()
		if err != nil {
			return
		}
		hs.wg.Add(1)
		go func() {
			defer hs.wg.Done()
			hs.record(hs.serveHandover(nc))
		}()
	}
}

func (hs *handoverServer) serveHandover(nc net.Conn) error {
	dup, err := nc.(*net.TCPConn).File()
	if err != nil {
		return err
	}
	c, err := hs.srv.Handshake(nc)
	if err != nil {
		return err
	}
	if err := serveUntilHandover(c); err != nil {
		c.Close()
		return err
	}
	st, err := exportAndCheck(c)
	if err != nil {
		return err
	}
	return hs.resumeAndServe(dup, st)
}

// serveUntilHandover answers the upper layer until "handover". After the
// login it pauses, so that what the client sends next is read ahead.
func serveUntilHandover(c *Conn) error {
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return err
		}
		r := wire.NewReader(p)
		if r.Byte("msg") == wire.MsgGlobalRequest && r.String("name") == "handover" {
			return nil
		}
		if err := handleUpper(c, p, nil); err != nil {
			return err
		}
		if p[0] == wire.MsgUserAuthRequest {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func exportAndCheck(c *Conn) (*State, error) {
	st, err := c.Export()
	if err != nil {
		return nil, err
	}
	if _, err := c.ReadPacket(); !errors.Is(err, ErrClosed) {
		return nil, errors.New("ReadPacket after Export did not fail with ErrClosed")
	}
	b, err := st.MarshalBinary()
	if err != nil {
		return nil, err
	}
	var back State
	if err := back.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return &back, nil
}

func (hs *handoverServer) resumeAndServe(dup *os.File, st *State) error {
	nc, err := net.FileConn(dup)
	dup.Close()
	if err != nil {
		return err
	}
	hs.states <- st
	c, err := hs.second.Resume(nc, st, nil)
	if err != nil {
		return err
	}
	hs.mu.Lock()
	hs.conns = append(hs.conns, c)
	hs.mu.Unlock()
	defer c.Close()
	return serveUpper(c)
}

// TestExportResume hands a connection over mid-stream for every cipher
// and MAC shape and checks the client notices nothing: data sent before,
// across and after the hand-over arrives intact, both ways, and key
// re-exchanges from either side work on the resumed connection.
func TestExportResume(t *testing.T) {
	cases := []struct{ cipher, mac string }{
		{"chacha20-poly1305@openssh.com", ""},
		{"aes128-gcm@openssh.com", ""},
		{"aes256-gcm@openssh.com", ""},
		{"aes128-ctr", "hmac-sha2-256-etm@openssh.com"},
		{"aes256-ctr", "hmac-sha2-512"},
		// Legacy: CBC resumes from its last ciphertext block.
		{"aes128-cbc", "hmac-sha1"},
		{"3des-cbc", "hmac-sha2-256-etm@openssh.com"},
	}
	for _, tc := range cases {
		t.Run(tc.cipher+"/"+tc.mac, func(t *testing.T) {
			macs := []string{"hmac-sha2-256-etm@openssh.com", "hmac-sha2-512", "hmac-sha1"}
			ciphers := SupportedCiphers()
			hs := newHandoverServer(t, &Config{MACs: macs, Ciphers: ciphers},
				&Config{MACs: macs, Ciphers: ciphers, RekeyBytes: 256 << 10})
			cfg := clientConfig("curve25519-sha256", tc.cipher, tc.mac, "")
			cfg.RekeyThreshold = 384 << 10
			cl, reqs := hs.dial(t, cfg)
			if _, _, err := cl.SendRequest("handover", false, nil); err != nil {
				t.Fatal(err)
			}
			push(t, cl, 1<<20) // also read ahead before the export
			st := <-hs.states
			if st.KexCount != 1 || st.In.Cipher != tc.cipher || st.Out.Cipher != tc.cipher {
				t.Fatalf("state: kex %d, ciphers %s/%s", st.KexCount, st.In.Cipher, st.Out.Cipher)
			}
			t.Logf("buffered at hand-over: %d bytes", len(st.Buffered))
			pullFrom(t, cl, reqs, 1<<20)
			push(t, cl, 1<<20)
			c, err := hs.lastConn()
			if err != nil {
				t.Fatal(err)
			}
			if n := c.KexCount(); n < 3 {
				t.Fatalf("resumed connection ran %d key exchanges in all, want re-exchanges after the hand-over", n)
			}
		})
	}
}

// TestExportRefused: no export before the first key exchange is over
// (nothing to resume) nor while one is running.
func TestExportRefused(t *testing.T) {
	srv, err := NewServer(&Config{Registry: testRegistry(t), HostKeys: allHostKeys(t)})
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer b.Close()
	c, err := newConn(srv, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Export(); err == nil {
		t.Fatal("exported a connection before any key exchange")
	}
	c.kexCount = 1
	c.kexPending = true
	if _, err := c.Export(); !errors.Is(err, ErrBusy) {
		t.Fatalf("export during a key exchange: %v, want ErrBusy", err)
	}
}

// TestStateUnmarshalBounds: hostile or damaged states are refused with a
// StateError, never resumed.
func TestStateUnmarshalBounds(t *testing.T) {
	good := &State{
		SessionID: bytes.Repeat([]byte{1}, 32), ClientVersion: "SSH-2.0-x", ServerVersion: "SSH-2.0-y", KexCount: 1,
		In:  DirectionState{Cipher: "aes128-gcm@openssh.com", Key: make([]byte, 16), IV: make([]byte, 12)},
		Out: DirectionState{Cipher: "aes128-ctr", MAC: "hmac-sha2-256", Key: make([]byte, 16), IV: make([]byte, 16), MACKey: make([]byte, 32)},
	}
	b, _ := good.MarshalBinary()
	var st State
	if err := st.UnmarshalBinary(b); err != nil {
		t.Fatalf("good state refused: %v", err)
	}
	bad := []func(s *State){
		func(s *State) { s.In.Cipher = "rot13" },
		func(s *State) { s.In.Key = s.In.Key[:15] },
		func(s *State) { s.Out.MAC = "" },
		func(s *State) { s.Out.MACKey = nil },
		func(s *State) { s.In.MAC = "hmac-sha2-256" },
		func(s *State) { s.SessionID = nil },
		func(s *State) { s.KexCount = 0 },
		func(s *State) { s.Buffered = make([]byte, MaxBuffered+1) },
	}
	for i, mutate := range bad {
		s := *good
		mutate(&s)
		b, _ := s.MarshalBinary()
		var st State
		var se *StateError
		if err := st.UnmarshalBinary(b); !errors.As(err, &se) {
			t.Errorf("case %d: %v, want a StateError", i, err)
		}
	}
	for n := 0; n < len(b); n++ {
		var st State
		if st.UnmarshalBinary(b[:n]) == nil {
			t.Fatalf("a state cut to %d of %d bytes was accepted", n, len(b))
		}
	}
}

// FuzzStateUnmarshal: any bytes from another process decode to an error
// or to a state that marshals back to the same bytes.
func FuzzStateUnmarshal(f *testing.F) {
	st := &State{
		SessionID: []byte{1, 2, 3}, ClientVersion: "SSH-2.0-c", ServerVersion: "SSH-2.0-s", KexCount: 2,
		In:       DirectionState{Cipher: "chacha20-poly1305@openssh.com", Key: make([]byte, 64), Seq: 7},
		Out:      DirectionState{Cipher: "aes256-ctr", MAC: "hmac-sha2-512-etm@openssh.com", Key: make([]byte, 32), IV: make([]byte, 16), MACKey: make([]byte, 64)},
		Buffered: []byte("abc"),
	}
	b, _ := st.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, p []byte) {
		var st State
		if st.UnmarshalBinary(p) != nil {
			return
		}
		again, _ := st.MarshalBinary()
		if !bytes.Equal(again, p) {
			t.Fatal("a decoded state does not marshal back to its bytes")
		}
	})
}

// TestAddCounter: the CTR counter block is a 128-bit big-endian integer.
func TestAddCounter(t *testing.T) {
	iv := append(bytes.Repeat([]byte{0}, 14), 0xff, 0xfe)
	got := addCounter(iv, 3)
	want := append(bytes.Repeat([]byte{0}, 13), 1, 0, 1)
	if !bytes.Equal(got, want) {
		t.Fatalf("addCounter: %x, want %x", got, want)
	}
	all := bytes.Repeat([]byte{0xff}, 16)
	if !bytes.Equal(addCounter(all, 1), make([]byte, 16)) {
		t.Fatal("the counter does not wrap at 2^128")
	}
}

// TestResumedMeasuredRekey: a resumed connection under CipherSelection
// measured has not seen the client's KEXINIT; the re-exchanges it starts
// offer the cipher in use, so a client that prefers another cipher keeps
// the measured one.
func TestResumedMeasuredRekey(t *testing.T) {
	scores := map[string]float64{"aes128-gcm@openssh.com": 10, "chacha20-poly1305@openssh.com": 1}
	first := &Config{CipherSelection: SelectionMeasured, CipherScores: scores}
	second := &Config{CipherSelection: SelectionMeasured, CipherScores: scores, RekeyBytes: 256 << 10}
	// the first exchange waits for the client's KEXINIT however long a
	// loaded machine takes (the 250 ms fallback is not under test here)
	hs := newHandoverServer(t, first, second, func(s *Server) { s.kexInitWait = time.Hour })
	cfg := clientConfig("curve25519-sha256", "", "", "")
	cfg.Ciphers = []string{"chacha20-poly1305@openssh.com", "aes128-gcm@openssh.com"}
	cfg.RekeyThreshold = 1 << 40 // only the server re-keys
	cl, reqs := hs.dial(t, cfg)
	if _, _, err := cl.SendRequest("handover", false, nil); err != nil {
		t.Fatal(err)
	}
	if st := <-hs.states; st.In.Cipher != "aes128-gcm@openssh.com" {
		t.Fatalf("first exchange chose %s, want the measured aes128-gcm@openssh.com", st.In.Cipher)
	}
	push(t, cl, 384<<10) // one re-exchange: the first after the hand-over is the one at stake
	c, err := hs.lastConn()
	if err != nil {
		t.Fatal(err)
	}
	if !waitFor(func() bool { return c.KexCount() >= 2 }) {
		t.Fatalf("%d key exchanges, want a server re-exchange after the hand-over", c.KexCount())
	}
	pullFrom(t, cl, reqs, 64<<10) // the re-exchange is over on both sides
	c.wmu.Lock()
	in, out := c.cipherInUseLocked(0), c.cipherInUseLocked(1)
	c.wmu.Unlock()
	if in != "aes128-gcm@openssh.com" || out != "aes128-gcm@openssh.com" {
		t.Errorf("after re-exchanges the ciphers are %s / %s, want the measured aes128-gcm@openssh.com", in, out)
	}
}
