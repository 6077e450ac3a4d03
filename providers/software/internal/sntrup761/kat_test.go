package sntrup761

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// drbg is the AES-256 CTR_DRBG of the NIST submission tool (rng.c) that
// generated kat_kem.rsp: each randombytes call takes whole blocks and then
// updates the state. Words draws each word with its own call, as the
// reference implementation's urandom32 does.
type drbg struct {
	key [32]byte
	v   [16]byte
}

func newDRBG(seed []byte) *drbg {
	d := &drbg{}
	d.update(seed)
	return d
}

func (d *drbg) block() []byte {
	for i := 15; i >= 0; i-- {
		d.v[i]++
		if d.v[i] != 0 {
			break
		}
	}
	c, _ := aes.NewCipher(d.key[:])
	out := make([]byte, 16)
	c.Encrypt(out, d.v[:])
	return out
}

func (d *drbg) update(data []byte) {
	var t []byte
	for range 3 {
		t = append(t, d.block()...)
	}
	for i := range data {
		t[i] ^= data[i]
	}
	copy(d.key[:], t[:32])
	copy(d.v[:], t[32:])
}

func (d *drbg) Bytes(out []byte) error {
	for i := 0; i < len(out); i += 16 {
		copy(out[i:], d.block())
	}
	d.update(nil)
	return nil
}

func (d *drbg) Words(out []uint32) error {
	var b [4]byte
	for i := range out {
		d.Bytes(b[:])
		out[i] = uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	}
	return nil
}

func readKAT(t *testing.T) map[string][]byte {
	t.Helper()
	f, err := os.Open("testdata/kat0.rsp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kat := map[string][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " = ")
		if !ok || strings.HasPrefix(k, "#") || k == "count" {
			continue
		}
		b, err := hex.DecodeString(v)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		kat[k] = b
	}
	for _, k := range []string{"seed", "pk", "sk", "ct", "ss"} {
		if kat[k] == nil {
			t.Fatalf("KAT lacks %s", k)
		}
	}
	return kat
}

// TestKnownAnswer reproduces the submission's first known answer: the
// key pair and the encapsulation from its seed, and the decapsulation.
func TestKnownAnswer(t *testing.T) {
	kat := readKAT(t)
	d := newDRBG(kat["seed"])
	pk, sk, err := GenerateKey(d)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pk, kat["pk"]) {
		t.Fatalf("pk differs from the KAT")
	}
	if !bytes.Equal(sk, kat["sk"]) {
		t.Fatalf("sk differs from the KAT")
	}
	ct, ss, err := Encapsulate(d, pk)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ct, kat["ct"]) || !bytes.Equal(ss, kat["ss"]) {
		t.Fatalf("encapsulation differs from the KAT")
	}
	got, err := Decapsulate(kat["sk"], kat["ct"])
	if err != nil || !bytes.Equal(got, kat["ss"]) {
		t.Fatalf("Decapsulate = %x, %v; KAT ss %x", got, err, kat["ss"])
	}
}
