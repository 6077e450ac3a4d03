package transport

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"hash"
	"testing"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/poly1305"
)

// refPacket is a plaintext packet: length, padding length, payload,
// padding, sized for cs.
func refPacket(cs *cipherSpec, payload []byte, pad int) []byte {
	p := binary.BigEndian.AppendUint32(nil, uint32(1+len(payload)+pad))
	p = append(p, byte(pad))
	p = append(p, payload...)
	return append(p, bytes.Repeat([]byte{0xAA}, pad)...)
}

// refSeal is an independent implementation of each construction, written
// from OpenSSH's PROTOCOL files with x/crypto and the standard library.
func refSeal(t *testing.T, cs *cipherSpec, ms *macSpec, k directionKeys, seqs []uint32, pkts [][]byte) [][]byte {
	var out [][]byte
	switch {
	case cs.aead != "":
		block, _ := aes.NewCipher(k.key)
		g, _ := cipher.NewGCM(block)
		nonce := bytes.Clone(k.iv)
		for _, p := range pkts {
			out = append(out, g.Seal(bytes.Clone(p[:4]), nonce, p[4:], p[:4]))
			binary.BigEndian.PutUint64(nonce[4:], binary.BigEndian.Uint64(nonce[4:])+1)
		}
	case cs.keyStream != "":
		for i, p := range pkts {
			nonce := make([]byte, 12)
			binary.BigEndian.PutUint64(nonce[4:], uint64(seqs[i]))
			hc, _ := chacha20.NewUnauthenticatedCipher(k.key[32:], nonce)
			mc, _ := chacha20.NewUnauthenticatedCipher(k.key[:32], nonce)
			var polyKey [32]byte
			mc.XORKeyStream(polyKey[:], polyKey[:])
			mc.SetCounter(1)
			c := make([]byte, len(p))
			hc.XORKeyStream(c[:4], p[:4])
			mc.XORKeyStream(c[4:], p[4:])
			var tag [16]byte
			poly1305.Sum(&tag, c, &polyKey)
			out = append(out, append(c, tag[:]...))
		}
	default:
		block, _ := aes.NewCipher(k.key)
		ctr := cipher.NewCTR(block, k.iv)
		newHash := map[string]func() hash.Hash{"hmac-sha256": sha256.New, "hmac-sha512": sha512.New}[ms.hmac]
		for i, p := range pkts {
			c := bytes.Clone(p)
			m := hmac.New(newHash, k.macKey)
			m.Write(binary.BigEndian.AppendUint32(nil, seqs[i]))
			if ms.etm { // encrypt, then MAC the clear length and the ciphertext
				ctr.XORKeyStream(c[4:], c[4:])
				m.Write(c)
			} else { // MAC the cleartext, encrypt everything
				m.Write(c)
				ctr.XORKeyStream(c, c)
			}
			out = append(out, m.Sum(c))
		}
	}
	return out
}

// TestCiphersAgainstReference seals packets with each construction and
// compares with the reference, then opens them back.
func TestCiphersAgainstReference(t *testing.T) {
	reg := testRegistry(t)
	for _, bc := range benchCiphers() {
		t.Run(bc.name, func(t *testing.T) {
			k := directionKeys{iv: randBytes(bc.cs.ivSize), key: randBytes(bc.cs.keySize)}
			if bc.ms != nil {
				k.macKey = randBytes(bc.ms.keySize)
			}
			seqs := []uint32{3, 4, 5}
			var pkts [][]byte
			for i, n := range []int{1, 100, 5000} {
				pl := bytes.Repeat([]byte{byte(i + 1)}, n)
				pad := 4 + (16-(5+n+4)%16)%16 // fits every mode: only alignment differs
				if !bc.cs.macBuiltIn && bc.ms.etm || bc.cs.aead != "" || bc.cs.keyStream != "" {
					pad = 4 + (16-(5+n)%16)%16
				}
				pkts = append(pkts, refPacket(bc.cs, pl, pad))
			}
			want := refSeal(t, bc.cs, bc.ms, k, seqs, pkts)
			w, _ := newPacketCipher(reg, bc.cs, bc.ms, k)
			r, _ := newPacketCipher(reg, bc.cs, bc.ms, k)
			defer w.Close()
			defer r.Close()
			for i, p := range pkts {
				buf := make([]byte, len(p), len(p)+maxTag)
				copy(buf, p)
				got := w.seal(seqs[i], buf)
				if !bytes.Equal(got, want[i]) {
					t.Fatalf("packet %d: sealed bytes differ from the reference", i)
				}
				if n := r.decryptLength(seqs[i], got[:4]); n != uint32(len(p)-4) {
					t.Fatalf("packet %d: length %d, want %d", i, n, len(p)-4)
				}
				body, err := r.open(seqs[i], got)
				if err != nil || !bytes.Equal(body, p[4:]) {
					t.Fatalf("packet %d: open: %v", i, err)
				}
			}
		})
	}
}

// TestCiphersRejectTampering flips every bit position class of a sealed
// packet (length, body, tag) and expects ErrMAC.
func TestCiphersRejectTampering(t *testing.T) {
	for _, bc := range benchCiphers() {
		t.Run(bc.name, func(t *testing.T) {
			p := refPacket(bc.cs, []byte("payload"), 8)
			for _, pos := range []int{0, 3, 4, 10, len(p) - 1, len(p), len(p) + 5} {
				w, r := cipherPair(t, bc.cs, bc.ms)
				buf := make([]byte, len(p), len(p)+maxTag)
				copy(buf, p)
				sealed := w.seal(7, buf)
				sealed[pos] ^= 1
				r.decryptLength(7, sealed[:4])
				if _, err := r.open(7, sealed); !errors.Is(err, ErrMAC) {
					t.Fatalf("flip at %d: err %v, want ErrMAC", pos, err)
				}
			}
			_, r := cipherPair(t, bc.cs, bc.ms)
			if _, err := r.open(0, make([]byte, 5)); err == nil {
				t.Fatal("a packet shorter than its tag opened")
			}
		})
	}
}

// TestPadding checks the alignment rules of RFC 4253 §6 and the AEAD/EtM
// modes for every payload size up to a few blocks.
func TestPadding(t *testing.T) {
	for _, c := range []packetCipher{noneCipher{}, &gcmCipher{}, &chachaCipher{}, &etmCipher{}, &eamCipher{}} {
		for n := 1; n < 100; n++ {
			pad := paddingFor(c, n)
			l := 1 + n + pad
			if c.lengthAligned() {
				l += 4
			}
			if pad < minPadding || pad > maxPadding || l%c.blockLen() != 0 {
				t.Fatalf("%T payload %d: padding %d", c, n, pad)
			}
		}
	}
}

// TestReaderRejects feeds malformed cleartext packets to the reader.
func TestReaderRejects(t *testing.T) {
	cases := map[string][]byte{
		"length too big":      {0x7f, 0xff, 0xff, 0xf8},
		"length zero":         {0, 0, 0, 0},
		"length unaligned":    {0, 0, 0, 13},
		"padding too short":   append([]byte{0, 0, 0, 12, 3}, make([]byte, 11)...),
		"padding eats packet": append([]byte{0, 0, 0, 12, 11}, make([]byte, 11)...),
		"truncated":           {0, 0, 0, 12, 4},
	}
	for name, in := range cases {
		l := newLoopback(t, nil, nil)
		l.buf.Write(in)
		if _, err := l.r.read(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestBigPackets: buffers grow for packets up to the maximum, under every
// cipher, and small ones still fit afterwards.
func TestBigPackets(t *testing.T) {
	for _, bc := range benchCiphers() {
		l := newLoopback(t, bc.cs, bc.ms)
		for _, n := range []int{10, MaxPayload, 100 << 10, 7} {
			p := bytes.Repeat([]byte{0x33}, n)
			if err := l.w.write(p); err != nil {
				t.Fatalf("%s: write %d: %v", bc.name, n, err)
			}
			got, err := l.r.read()
			if err != nil || !bytes.Equal(got, p) {
				t.Fatalf("%s: read %d: %v", bc.name, n, err)
			}
		}
		if err := l.w.write(make([]byte, MaxPayload+1)); err == nil {
			t.Fatalf("%s: oversized payload written", bc.name)
		}
	}
}
