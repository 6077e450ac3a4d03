//go:build cgo && !nopkcs11

package pipeline

import (
	"fmt"
	"testing"
	"time"
)

const (
	gcm       = "aes128-gcm@openssh.com"
	benchSize = 8 << 20
)

// setup is one way of putting a connection's AES-GCM on tokens.
type setup struct {
	name                 string
	tokens, lanes, depth int
}

// setups: one session and one packet at a time (the transport before
// pipelining), then the pipeline over one token and over two.
var setups = []setup{
	{"serial", 1, 1, 1},
	{"1token", 1, 4, 0},
	{"2tokens", 2, 4, 0},
}

var delays = []time.Duration{0, 200 * time.Microsecond, 2 * time.Millisecond}

// BenchmarkOneConnection moves 8 MiB per iteration over one connection,
// each way, for every setup, injected latency per C_Encrypt/C_Decrypt
// and path (the server's own process, or a post-auth process reaching
// the token through the monitor).
func BenchmarkOneConnection(b *testing.B) {
	for _, st := range setups {
		tok := openTokens(b, st.tokens, st.lanes)
		reg := tok.registry(b)
		for _, path := range []string{"inprocess", "monitor"} {
			r := reg
			if path == "monitor" {
				r = throughMonitor(b, reg)
			}
			srv := startServer(b, r, st.depth)
			c := srv.dialRemote(b)
			for _, d := range delays {
				tok.setDelay(b, d)
				for _, dir := range []string{"upload", "download"} {
					b.Run(fmt.Sprintf("delay=%v/%s/%s/%s", d, dir, st.name, path), func(b *testing.B) {
						transfer(b, c, dir, benchSize)
						b.ReportMetric(float64(tok.sessions()), "sessions")
					})
				}
			}
			tok.setDelay(b, 0)
			c.close()
		}
	}
}

// BenchmarkDepth is the pipeline's depth against throughput: two tokens,
// AEADs of up to 8 lanes, 2 ms per call.
func BenchmarkDepth(b *testing.B) {
	tok := openTokens(b, 2, 8)
	reg := tok.registry(b)
	tok.setDelay(b, 2*time.Millisecond)
	for _, depth := range []int{1, 2, 4, 8, 16, 32} {
		srv := startServer(b, reg, depth)
		c := srv.dialRemote(b)
		for _, dir := range []string{"upload", "download"} {
			b.Run(fmt.Sprintf("depth=%d/%s", depth, dir), func(b *testing.B) {
				transfer(b, c, dir, benchSize)
			})
		}
		c.close()
	}
}

func transfer(b *testing.B, c *remote, dir string, n int) {
	b.SetBytes(int64(n))
	for b.Loop() {
		if err := c.do(dir, n); err != nil {
			b.Fatal(err)
		}
	}
}

// sessions is how many sessions of the tokens are in use (AEAD lanes).
func (t *tokens) sessions() int {
	n := 0
	for _, h := range t.p.Health() {
		n += h.InUse
	}
	return n
}
