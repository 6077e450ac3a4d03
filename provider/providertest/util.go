package providertest

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/offload/offload/provider"
)

// SeedEnv names the variable that fixes the seed of the suite's inputs.
const SeedEnv = "OFFLOAD_PROVIDERTEST_SEED"

// rng produces the suite's non-secret test inputs.
type rng struct{ r *rand.Rand }

func newRNG(t testing.TB) *rng {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(SeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("providertest: bad %s=%q: %v", SeedEnv, s, err)
		}
		seed = v
	}
	t.Logf("providertest: seed %d (set %s to replay)", seed, SeedEnv)
	return &rng{rand.New(rand.NewPCG(seed, 0x6f66666c6f6164))}
}

func (g *rng) bytes(n int) []byte {
	b := make([]byte, n)
	g.fill(b)
	return b
}

func (g *rng) fill(b []byte) {
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
}

func (g *rng) intn(n int) int { return g.r.IntN(n) }

// panicValue runs f and returns what it panicked with, or nil.
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// mustPanic fails t unless f panics.
func mustPanic(t testing.TB, what string, f func()) {
	t.Helper()
	if panicValue(f) == nil {
		t.Errorf("%s: did not panic", what)
	}
}

// noPanic runs f and fails t if it panics.
func noPanic(t testing.TB, what string, f func()) bool {
	t.Helper()
	if v := panicValue(f); v != nil {
		t.Errorf("%s: panicked: %v", what, v)
		return false
	}
	return true
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic("providertest: bad hex in vector table: " + err.Error())
	}
	return b
}

// short formats b for messages without flooding the log.
func short(b []byte) string {
	if len(b) <= 48 {
		return fmt.Sprintf("%x", b)
	}
	return fmt.Sprintf("%x…(%d bytes)", b[:48], len(b))
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// flip returns a copy of b with bit bit of byte i inverted.
func flip(b []byte, i, bit int) []byte {
	c := clone(b)
	c[i] ^= 1 << (bit % 8)
	return c
}

// wantKeySizeError fails t unless err is a *provider.KeySizeError.
func wantKeySizeError(t testing.TB, what string, err error) {
	t.Helper()
	var kse *provider.KeySizeError
	switch {
	case err == nil:
		t.Errorf("%s: accepted", what)
	case !errors.As(err, &kse):
		t.Errorf("%s: error %q is not a *provider.KeySizeError", what, err)
	}
}

// otherFamily returns a catalog algorithm not of family f, for checking that
// constructors refuse algorithms of the wrong family.
func otherFamily(f provider.Family) *provider.Algorithm {
	name := "sha256"
	if f == provider.FamilyHash {
		name = "aes128-gcm"
	}
	return provider.MustLookup(name)
}

// checkFamily stops t when alg is not of family f: the caller passed the
// wrong algorithm, and nothing else would make sense.
func checkFamily(t testing.TB, alg *provider.Algorithm, f provider.Family) {
	t.Helper()
	if alg == nil {
		t.Fatalf("providertest: nil algorithm")
	}
	if alg.Family != f {
		t.Fatalf("providertest: %s is a %s, this sub-suite tests %s", alg.Name, alg.Family, f)
	}
}

// leaksPlaintext reports an 8-byte run of pt found at its own offset in
// mem: used to prove a failed Open did not leave plaintext behind.
func leaksPlaintext(mem, pt []byte) bool {
	for off := 0; off+8 <= len(pt) && off+8 <= len(mem); off += 8 {
		if bytes.Equal(mem[off:off+8], pt[off:off+8]) {
			return true
		}
	}
	return false
}

// release frees a primitive the suite made, as provider.Release does, and
// reports a failure to do so. Primitives of hardware providers can hold
// device sessions, so the suite releases each one as soon as it is done
// with it and never keeps more than a few alive at once.
func release(t testing.TB, v any) {
	t.Helper()
	if v == nil {
		return
	}
	if err := provider.Release(v); err != nil {
		t.Errorf("releasing %T: %v", v, err)
	}
}
