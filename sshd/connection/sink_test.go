package connection

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

// bothModes runs f with channel data batched (the transport's
// wire.ReadWaiter) and written packet by packet.
func bothModes(t *testing.T, f func(t *testing.T, c *client)) {
	for _, plain := range []bool{false, true} {
		name := map[bool]string{false: "batched", true: "plain"}[plain]
		t.Run(name, func(t *testing.T) {
			f(t, startClientConn(t, t.Context(), nil, self(t), plain))
		})
	}
}

// randomChunks sends about n bytes in chunks of random size to ch and
// returns their SHA-256 as sha256sum prints it.
func randomChunks(ch *cchan, seed uint64, n int) string {
	rng := rand.New(rand.NewPCG(seed, seed))
	want := sha256.New()
	for sent := 0; sent < n; {
		b := make([]byte, 1+rng.IntN(40_000))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		ch.write(b)
		want.Write(b)
		sent += len(b)
	}
	return hex.EncodeToString(want.Sum(nil))
}

func checkSum(t *testing.T, ch *cchan, want string) {
	t.Helper()
	if got := strings.Fields(ch.stdout.String()); len(got) == 0 || got[0] != want {
		t.Errorf("sha256sum printed %q, want %s", ch.stdout.String(), want)
	}
}

// TestSinkLateReader uploads to a program that starts reading only after
// a while: the first bytes go straight to the pipe, the rest wait in the
// ring for the pump once the pipe is full; all arrive, in order.
func TestSinkLateReader(t *testing.T) {
	bothModes(t, func(t *testing.T, c *client) {
		ch := c.session(t)
		ch.exec("sleep 0.3; sha256sum")
		want := randomChunks(ch, 7, 3<<20)
		ch.sendEOF()
		ch.waitClosed(t)
		checkSum(t, ch, want)
		c.checkFaults(t)
	})
}

// TestSinkReaderExits uploads more than a program reads before it exits:
// the rest is discarded, the window keeps moving and the session ends
// with the program's status.
func TestSinkReaderExits(t *testing.T) {
	bothModes(t, func(t *testing.T, c *client) {
		ch := c.session(t)
		ch.exec("head -c 1000 >/dev/null")
		b := make([]byte, 32768)
		for range 128 { // 4 MiB, twice the window
			ch.write(b)
		}
		ch.sendEOF()
		ch.waitClosed(t)
		if ch.exitStatus != 0 {
			t.Errorf("exit status %d", ch.exitStatus)
		}
		c.checkFaults(t)
	})
}

// waitStdout waits until the channel's stdout is want; a batched sink
// that held data while the connection went quiet would never get there.
func waitStdout(t *testing.T, ch *cchan, want string) {
	t.Helper()
	if !testenv.WaitUntil(t, func() bool {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		return ch.stdout.String() == want
	}) {
		t.Fatalf("stdout never became %q", want)
	}
}

// TestSinkBatchQuiet types into cat one key at a time: each key must come
// back before the next is sent, so data held for batching is written as
// soon as the connection has nothing more to read.
func TestSinkBatchQuiet(t *testing.T) {
	bothModes(t, func(t *testing.T, c *client) {
		ch := c.session(t)
		ch.exec("cat")
		typed := ""
		for _, k := range "hello, world" {
			ch.write([]byte(string(k)))
			typed += string(k)
			waitStdout(t, ch, typed)
		}
		ch.sendEOF()
		ch.waitClosed(t)
		c.checkFaults(t)
	})
}

// TestSinkBatchInterleaved uploads to two programs at once with their
// packets interleaved and arriving in bursts, the last one ending with
// both EOFs: a packet for the other channel, or any other message, ends
// the batch, and each program gets exactly its own bytes.
func TestSinkBatchInterleaved(t *testing.T) {
	bothModes(t, func(t *testing.T, c *client) {
		a, b := c.session(t), c.session(t)
		a.exec("sha256sum")
		b.exec("sha256sum")
		ha, hb := sha256.New(), sha256.New()
		rng := rand.New(rand.NewPCG(1, 2))
		for round := range 20 {
			c.server.in.pause()
			for range 8 { // little enough that the pipes never fill
				ch, h := a, ha
				if rng.IntN(2) == 0 {
					ch, h = b, hb
				}
				p := make([]byte, 1+rng.IntN(6000))
				for i := range p {
					p[i] = byte(rng.Uint32())
				}
				ch.write(p)
				h.Write(p)
			}
			if round == 19 {
				a.sendEOF()
				b.sendEOF()
			}
			c.server.in.resume()
			time.Sleep(5 * time.Millisecond) // let the programs read
		}
		a.waitClosed(t)
		b.waitClosed(t)
		checkSum(t, a, hex.EncodeToString(ha.Sum(nil)))
		checkSum(t, b, hex.EncodeToString(hb.Sum(nil)))
		c.checkFaults(t)
	})
}

// TestSinkPipeGrows uploads to a program that reads late: once the
// read loop finds its stdin pipe full, the pipe is enlarged to bulkPipe
// (the program reports its capacity, F_GETPIPE_SZ), and every byte still
// arrives.
func TestSinkPipeGrows(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed to read the pipe's capacity")
	}
	c := startClientConn(t, t.Context(), nil, self(t), false)
	ch := c.session(t)
	ch.exec(`sleep 0.3; python3 -c 'import fcntl, hashlib, sys; print(fcntl.fcntl(0, 1032)); print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())'`)
	want := randomChunks(ch, 9, 3<<20)
	ch.sendEOF()
	ch.waitClosed(t)
	got := strings.Fields(ch.stdout.String())
	if len(got) != 2 || got[0] != strconv.Itoa(bulkPipe) || got[1] != want {
		t.Errorf("program printed %q, want the pipe size %d and sha256 %s", ch.stdout.String(), bulkPipe, want)
	}
	c.checkFaults(t)
}
