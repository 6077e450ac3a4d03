package transport

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
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
		encrypt := refEncrypter(cs, k)
		for i, p := range pkts {
			c := bytes.Clone(p)
			m := refMAC(t, ms, k.macKey, seqs[i])
			if ms.etm { // encrypt, then MAC the clear length and the ciphertext
				encrypt(c[4:])
				m.Write(c)
			} else { // MAC the cleartext, encrypt everything
				m.Write(c)
				encrypt(c)
			}
			out = append(out, m.Sum(c)[:len(c)+ms.tagSize])
		}
	}
	return out
}

// refEncrypter is CTR or CBC over the standard library's AES and DES.
func refEncrypter(cs *cipherSpec, k directionKeys) func([]byte) {
	var block cipher.Block
	if cs.block == "3des" {
		block, _ = des.NewTripleDESCipher(k.key)
	} else {
		block, _ = aes.NewCipher(k.key)
	}
	if cs.block != "" {
		cbc := cipher.NewCBCEncrypter(block, k.iv)
		return func(b []byte) { cbc.CryptBlocks(b, b) }
	}
	ctr := cipher.NewCTR(block, k.iv)
	return func(b []byte) { ctr.XORKeyStream(b, b) }
}

// refMAC is the packet MAC with the sequence number written: HMAC from
// the standard library over the 4-byte number; UMAC (for which there is
// no second implementation) from the registry, over the 8-byte nonce.
func refMAC(t *testing.T, ms *macSpec, key []byte, seq uint32) hash.Hash {
	newHash := map[string]func() hash.Hash{"hmac-sha256": sha256.New, "hmac-sha512": sha512.New,
		"hmac-sha1": sha1.New, "hmac-md5": md5.New}[ms.hmac]
	if newHash != nil {
		m := hmac.New(newHash, key)
		m.Write(binary.BigEndian.AppendUint32(nil, seq))
		return m
	}
	m, err := testRegistry(t).MAC(ms.hmac, key)
	if err != nil {
		t.Fatal(err)
	}
	m.Write(binary.BigEndian.AppendUint64(nil, uint64(seq)))
	return m
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
				if n := r.decryptLength(seqs[i], got[:lengthBytes(r)]); n != uint32(len(p)-4) {
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
			pad := 8
			if bc.cs.block != "" { // CBC needs whole blocks
				w, _ := cipherPair(t, bc.cs, bc.ms)
				pad = paddingFor(w, len("payload"))
			}
			p := refPacket(bc.cs, []byte("payload"), pad)
			for _, pos := range []int{0, 3, 4, 10, len(p) - 1, len(p), len(p) + 5} {
				w, r := cipherPair(t, bc.cs, bc.ms)
				buf := make([]byte, len(p), len(p)+maxTag)
				copy(buf, p)
				sealed := w.seal(7, buf)
				sealed[pos] ^= 1
				r.decryptLength(7, sealed[:lengthBytes(r)])
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
