package connection

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSinkLateReader uploads to a program that starts reading only after
// a while: the first bytes go straight to the pipe, the rest wait in the
// ring for the pump once the pipe is full; all arrive, in order.
func TestSinkLateReader(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	ch.exec("sleep 0.3; sha256sum")
	rng := rand.New(rand.NewPCG(7, 7))
	want := sha256.New()
	for sent := 0; sent < 3<<20; {
		b := make([]byte, 1+rng.IntN(40_000))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		ch.write(b)
		want.Write(b)
		sent += len(b)
	}
	ch.sendEOF()
	ch.waitClosed(t)
	if got := strings.Fields(ch.stdout.String()); len(got) == 0 || got[0] != hex.EncodeToString(want.Sum(nil)) {
		t.Errorf("sha256sum printed %q", ch.stdout.String())
	}
	c.checkFaults(t)
}

// TestSinkReaderExits uploads more than a program reads before it exits:
// the rest is discarded, the window keeps moving and the session ends
// with the program's status.
func TestSinkReaderExits(t *testing.T) {
	c := startClient(t, nil, self(t))
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
}
