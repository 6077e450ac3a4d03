package transport

import (
	"encoding/binary"
	"net"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/wire"
)

// writeRecorder keeps a copy of each Write on a connection.
type writeRecorder struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes = append(w.writes, append([]byte(nil), p...))
	w.mu.Unlock()
	return w.Conn.Write(p)
}

// TestKexReplyInOneWrite: the server's last key-exchange reply, its
// NEWKEYS and the EXT_INFO that follows go to the socket in one write, so
// the client gets them in one segment and one wake-up, as OpenSSH's
// server sends them.
func TestKexReplyInOneWrite(t *testing.T) {
	ts := newTestServer(t, &Config{})
	rec := &writeRecorder{}
	ts.mu.Lock()
	ts.wrapServerNC = func(nc net.Conn) net.Conn { rec.Conn = nc; return rec }
	ts.mu.Unlock()
	ts.dial(t, clientConfig("curve25519-sha256", "aes128-gcm@openssh.com", "", ssh.KeyAlgoED25519))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, w := range rec.writes {
		if len(w) < 6 || w[5] != wire.MsgKexECDHReply {
			continue
		}
		next := 4 + int(binary.BigEndian.Uint32(w)) // the reply is in the clear
		if next+6 > len(w) || w[next+5] != wire.MsgNewKeys {
			t.Fatalf("the ECDH reply went out without NEWKEYS after it (write of %d bytes)", len(w))
		}
		if after := next + 4 + int(binary.BigEndian.Uint32(w[next:])); after >= len(w) {
			t.Fatal("EXT_INFO was not in the write with the reply and NEWKEYS")
		}
		return
	}
	t.Fatalf("no write starts with the ECDH reply (%d writes)", len(rec.writes))
}
