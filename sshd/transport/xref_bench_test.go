package transport

import (
	"net"
	"testing"

	"golang.org/x/crypto/ssh"
)

// BenchmarkTransportUploadXCryptoServer is BenchmarkTransportUpload against
// the x/crypto/ssh server, for comparison on the same machine.
func BenchmarkTransportUploadXCryptoServer(b *testing.B) {
	scfg := &ssh.ServerConfig{NoClientAuth: true}
	s, _ := ssh.NewSignerFromSigner(allHostKeys(b)[0])
	scfg.AddHostKey(s)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	defer l.Close()
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		_, _, reqs, err := ssh.NewServerConn(nc, scfg)
		if err != nil {
			return
		}
		for r := range reqs {
			if r.WantReply {
				r.Reply(true, nil)
			}
		}
	}()
	cl, err := ssh.Dial("tcp", l.Addr().String(), clientConfig("curve25519-sha256", "aes128-gcm@openssh.com", "", ""))
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 32<<10)
	b.SetBytes(32 << 20)
	for b.Loop() {
		for n := 0; n < 32<<20; n += len(buf) {
			cl.SendRequest("data", false, buf)
		}
		cl.SendRequest("sum", true, nil)
	}
}
