package hostile

import (
	"sync"
	"testing"
	"time"

	"github.com/offload/offload/test/hostile/rawclient"
)

// closeBound is how long after LoginGraceTime the server may take to
// drop a client that has not logged in.
const closeBound = graceTime + 5*time.Second

// TestSlowloris holds connections open before authentication in every
// slow way: LoginGraceTime must end each, and they must not stop others
// from logging in meanwhile.
func TestSlowloris(t *testing.T) {
	e := newEnv(t, nil)
	slow := []struct {
		name  string
		stall func(t *testing.T, rc *rawclient.Conn)
	}{
		{"silent", func(*testing.T, *rawclient.Conn) {}},
		{"version-drip", func(t *testing.T, rc *rawclient.Conn) {
			go drip(rc, []byte("SSH-2.0-slowloris-0123456789-0123456789\r\n"))
		}},
		{"packet-drip", func(t *testing.T, rc *rawclient.Conn) {
			if err := rc.ExchangeVersions(rawclient.DefaultVersion); err != nil {
				t.Fatal(err)
			}
			p := rc.KexInitPayload(nil)
			go drip(rc, rawclient.Packet(p, rc.Padding(len(p))))
		}},
		{"stall-in-kex", func(t *testing.T, rc *rawclient.Conn) {
			rc.ExchangeVersions(rawclient.DefaultVersion)
			rc.SendKexInit(nil)
		}},
		{"stall-in-auth", func(t *testing.T, rc *rawclient.Conn) {
			if err := rc.Handshake(nil); err != nil {
				t.Fatal(err)
			}
			rc.RequestService("ssh-userauth")
		}},
		{"ignore-drip-in-auth", func(t *testing.T, rc *rawclient.Conn) {
			if err := rc.Handshake(nil); err != nil {
				t.Fatal(err)
			}
			go func() {
				for range 100 {
					if rc.WritePacket(ignoreMsg(8)) != nil {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
		}},
	}
	for _, s := range slow {
		e.run(s.name, func(t *testing.T) {
			rc := e.dial(t)
			s.stall(t, rc)
			took := expectClosed(t, rc, closeBound)
			t.Logf("closed after %v (LoginGraceTime %v)", took.Round(10*time.Millisecond), graceTime)
		})
	}
	e.run("many-slow-clients", func(t *testing.T) { manySlow(t, e) })
}

// drip writes b one byte every 200ms, for at most a minute.
func drip(rc *rawclient.Conn, b []byte) {
	for i := 0; i < len(b) && i < 300; i++ {
		if rc.WriteRaw(b[i:i+1]) != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// manySlow opens several silent clients (fewer than MaxStartups), checks
// that a real login still succeeds meanwhile, and that all are dropped.
func manySlow(t *testing.T, e *env) {
	const n = 6
	var clients []*rawclient.Conn
	for range n {
		clients = append(clients, e.dial(t))
	}
	if e.stream != nil {
		c, err := e.srv.Dial()
		if err != nil {
			t.Errorf("login while %d slow clients wait: %v", n, err)
		} else {
			c.Close()
		}
	}
	var wg sync.WaitGroup
	for _, rc := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			expectClosed(t, rc, closeBound)
		}()
	}
	wg.Wait()
}
