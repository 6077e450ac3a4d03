package transport

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/wire"
)

// TestRekeyAllowance: a client that re-keys every 64 KiB of data, or
// every second when idle, never waits; one that asks without end waits
// one interval per exchange beyond its burst, and is never refused.
func TestRekeyAllowance(t *testing.T) {
	p := defaultPace
	start := time.Unix(1_800_000_000, 0)
	t.Run("per-64KiB at any speed", func(t *testing.T) {
		var a rekeyAllowance
		now := start
		for i := range 40000 { // 2.5 GiB at 1 GiB/s: one every 61 µs
			now = now.Add(61 * time.Microsecond)
			a.accrue(p, now, ClientRekeyBytes)
			if w := a.take(p); w != 0 {
				t.Fatalf("exchange %d after %d bytes waits %v", i, ClientRekeyBytes, w)
			}
		}
	})
	t.Run("per-second when idle", func(t *testing.T) {
		var a rekeyAllowance
		now := start
		for i := range 3600 {
			now = now.Add(ClientRekeyEvery)
			a.accrue(p, now, 0)
			if w := a.take(p); w != 0 {
				t.Fatalf("exchange %d a second after the last waits %v", i, w)
			}
		}
	})
	t.Run("flood", func(t *testing.T) {
		var a rekeyAllowance
		now := start
		for i := range 100 {
			a.accrue(p, now, 100) // a few bytes, no time between
			w := a.take(p)
			switch {
			case i < ClientRekeyBurst && w != 0:
				t.Fatalf("exchange %d within the burst waits %v", i, w)
			case i >= ClientRekeyBurst && (w <= 0 || w > ClientRekeyEvery):
				t.Fatalf("exchange %d beyond the burst waits %v, want (0, %v]", i, w, ClientRekeyEvery)
			}
			now = now.Add(w) // the exchange is answered after its wait
		}
		// 100 exchanges: the burst, then about one per interval.
		if d := now.Sub(start); d < (100-ClientRekeyBurst-1)*ClientRekeyEvery {
			t.Fatalf("100 exchanges in %v", d)
		}
	})
	t.Run("clock going back", func(t *testing.T) {
		var a rekeyAllowance
		a.accrue(p, start, 0)
		a.accrue(p, start.Add(-time.Hour), 0)
		if a.units != ClientRekeyBurst {
			t.Fatalf("%v units", a.units)
		}
	})
}

// TestNoRekeyDuringAuth: with a 16-byte RekeyLimit the server wants a
// re-exchange after every packet; from the client's SERVICE_REQUEST
// until USERAUTH_SUCCESS it must start none (an OpenSSH client aborts on
// a KEXINIT during authentication), and start them again after.
func TestNoRekeyDuringAuth(t *testing.T) {
	ts := newTestServer(t, &Config{RekeyBytes: 16})
	var mu sync.Mutex
	var during []string
	addr, conns := serveOwn(t, ts.srv, func(c *Conn) error {
		h := sha256.New()
		failures := 0
		for {
			p, err := c.ReadPacket()
			if err != nil {
				return err
			}
			if p[0] == wire.MsgServiceRequest || p[0] == wire.MsgUserAuthRequest {
				c.wmu.Lock()
				pending, n := c.kexPending, c.kexCount
				c.wmu.Unlock()
				if pending || n != 1 {
					mu.Lock()
					during = append(during, "message "+string(rune('0'+p[0]/10))+string(rune('0'+p[0]%10)))
					mu.Unlock()
				}
			}
			if p[0] == wire.MsgUserAuthRequest && failures < 3 {
				failures++ // three failures first: more packets during auth
				if err := c.WritePacket(append(wire.AppendString([]byte{wire.MsgUserAuthFailure}, "password"), 0)); err != nil {
					return err
				}
				continue
			}
			if err := handleUpper(c, p, h); err != nil {
				return err
			}
		}
	})
	cfg := clientConfig("curve25519-sha256", "aes128-gcm@openssh.com", "", "")
	tries := 0
	cfg.Auth = []ssh.AuthMethod{ssh.RetryableAuthMethod(ssh.PasswordCallback(func() (string, error) {
		tries++
		return "secret", nil
	}), 5)}
	cl, reqs := dialOwn(t, addr, cfg)
	push(t, cl, 256<<10)
	pullFrom(t, cl, reqs, 256<<10)
	c := <-conns
	mu.Lock()
	defer mu.Unlock()
	if len(during) > 0 {
		t.Fatalf("the server re-keyed during user authentication, seen at: %v", during)
	}
	// Writes queued during an exchange go out together after it, so the
	// count depends on timing; one re-exchange after authentication is
	// what must happen.
	if !waitFor(func() bool { return c.KexCount() >= 2 }) {
		t.Fatalf("no key re-exchange after authentication with a 16-byte limit (%d exchanges)", c.KexCount())
	}
	t.Logf("%d password tries; %d key exchanges, all after authentication", tries, c.KexCount())
}

// TestClientRekeyFloodDelayed: a client that re-keys after every 256
// bytes, far beyond a tight allowance, is delayed, never refused: its
// data arrives intact.
func TestClientRekeyFloodDelayed(t *testing.T) {
	ts := newTestServer(t, &Config{}, func(s *Server) {
		s.pace = paceParams{burst: 2, bytes: 1 << 30, every: 20 * time.Millisecond}
	})
	cfg := clientConfig("curve25519-sha256", "chacha20-poly1305@openssh.com", "", "")
	cfg.RekeyThreshold = 256
	cl, _ := ts.dial(t, cfg)
	// One request at a time: each is more than the threshold, so the
	// client starts an exchange before each and after each reply.
	for i := range 60 {
		data := bytes.Repeat([]byte{byte(i)}, 1024)
		ok, got, err := cl.SendRequest("echo", true, data)
		if err != nil || !ok || !bytes.Equal(got, data) {
			t.Fatalf("echo %d: ok=%v err=%v, equal %v", i, ok, err, bytes.Equal(got, data))
		}
	}
	c, err := ts.lastConn()
	if err != nil {
		t.Fatal(err)
	}
	if !waitFor(func() bool { return c.KexCount() >= 3 }) {
		t.Fatalf("only %d key exchanges for a client re-keying every 256 bytes", c.KexCount())
	}
	for _, err := range ts.connErrors() {
		if err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("connection error: %v", err)
		}
	}
	t.Logf("%d key exchanges", c.KexCount())
}

// serveOwn serves connections of srv on a listener of its own with
// upper as the layer above the transport; each connection is sent on
// the returned channel after its first exchange.
func serveOwn(t *testing.T, srv *Server, upper func(*Conn) error) (string, <-chan *Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan *Conn, 16)
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := srv.Handshake(nc)
				if err != nil {
					return
				}
				conns <- c
				t.Cleanup(func() { c.Close() })
				upper(c)
			}()
		}
	}()
	return l.Addr().String(), conns
}

// dialOwn connects an x/crypto/ssh client to addr.
func dialOwn(t *testing.T, addr string, cfg *ssh.ClientConfig) (*ssh.Client, <-chan *ssh.Request) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cc, chans, reqs, err := ssh.NewClientConn(nc, addr, cfg)
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	cl := ssh.NewClient(cc, chans, nil)
	t.Cleanup(func() { cl.Close() })
	return cl, reqs
}
