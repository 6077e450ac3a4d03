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

// katSeeds are the seeds of the first two records of the submission's
// kat_kem.rsp; katSecrets the shared secrets (ss) of those records.
var (
	katSeeds = []string{
		"061550234D158C5EC95595FE04EF7A25767F2E24CC2BC479D09D86DC9ABCFDE7056A8C266F9EF97ED08541DBD2E1FFA1",
		"D81C4D8D734FCBFBEADE3D3F8A039FAA2A2C9957E835AD55B22E75BF57BB556AC81ADDE6AEEB4A5A875C3BFCADFA958F",
	}
	katSecrets = []string{
		"344CA5E25F6DA5EA95E4A695B1C5446ECA9859334532E4A9537669F012C743A2",
		"16C15126F734E51268BA916CE3B39A72E171AE79B8C2B6A68B34AB0DC5621B7E",
	}
)

// TestKnownAnswerSeeds: the NIST tool draws each record's seed from a
// DRBG seeded with the bytes 0..47; the first two seeds must come out as
// the file has them, and each record's seed must give the record's
// shared secret (count = 1 as well as count = 0, whose full record is
// checked by TestKnownAnswer).
func TestKnownAnswerSeeds(t *testing.T) {
	entropy := make([]byte, 48)
	for i := range entropy {
		entropy[i] = byte(i)
	}
	master := newDRBG(entropy)
	for i, want := range katSeeds {
		seed := make([]byte, 48)
		master.Bytes(seed)
		if got := strings.ToUpper(hex.EncodeToString(seed)); got != want {
			t.Fatalf("count %d: seed %s, want %s", i, got, want)
		}
		d := newDRBG(seed)
		pk, sk, err := GenerateKey(d)
		if err != nil {
			t.Fatal(err)
		}
		ct, ss, err := Encapsulate(d, pk)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.ToUpper(hex.EncodeToString(ss)); got != katSecrets[i] {
			t.Fatalf("count %d: ss %s, want %s", i, got, katSecrets[i])
		}
		if back, err := Decapsulate(sk, ct); err != nil || !bytes.Equal(back, ss) {
			t.Fatalf("count %d: Decapsulate = %x, %v", i, back, err)
		}
	}
}
