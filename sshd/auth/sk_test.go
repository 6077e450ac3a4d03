package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/wire"
)

// skSigner plays a FIDO authenticator: it signs as PROTOCOL.u2f says with
// chosen flags.
type skSigner struct {
	t       testing.TB
	pub     ssh.PublicKey
	ed      ed25519.PrivateKey
	ec      *ecdsa.PrivateKey
	flags   byte
	counter uint32
	lie     bool // send a counter other than the signed one
}

func newSKSigner(t testing.TB, typ string, flags byte) *skSigner {
	t.Helper()
	s := &skSigner{t: t, flags: flags, counter: 41}
	b := wire.AppendString(nil, typ)
	if typ == skEd25519 {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		s.ed = priv
		b = wire.AppendBytes(b, pub)
	} else {
		s.ec, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		pt, _ := s.ec.PublicKey.Bytes()
		b = wire.AppendBytes(wire.AppendString(b, "nistp256"), pt)
	}
	pub, err := ssh.ParsePublicKey(wire.AppendString(b, "ssh:"))
	if err != nil {
		t.Fatal(err)
	}
	s.pub = pub
	return s
}

func (s *skSigner) PublicKey() ssh.PublicKey { return s.pub }

func (s *skSigner) Sign(_ io.Reader, data []byte) (*ssh.Signature, error) {
	app, dh := sha256.Sum256([]byte("ssh:")), sha256.Sum256(data)
	msg := append(app[:], s.flags)
	msg = append(wire.AppendUint32(msg, s.counter), dh[:]...)
	var blob []byte
	if s.ed != nil {
		blob = ed25519.Sign(s.ed, msg)
	} else {
		d := sha256.Sum256(msg)
		r, sv, err := ecdsa.Sign(rand.Reader, s.ec, d[:])
		if err != nil {
			return nil, err
		}
		blob = wire.AppendMPInt(wire.AppendMPInt(nil, r.Bytes()), sv.Bytes())
	}
	counter := s.counter
	if s.lie {
		counter++
	}
	return &ssh.Signature{Format: s.pub.Type(), Blob: blob, Rest: wire.AppendUint32([]byte{s.flags}, counter)}, nil
}

func TestSecurityKeys(t *testing.T) {
	for _, typ := range []string{skEd25519, skECDSA} {
		for _, tc := range []struct {
			name  string
			opts  string
			flags byte
			lie   bool
			ok    bool
		}{
			{"touched", "", flagUserPresent, false, true},
			{"untouched", "", 0, false, false},
			{"untouched no-touch-required", "no-touch-required", 0, false, true},
			{"verify-required without UV", "verify-required", flagUserPresent, false, false},
			{"verify-required with UV", "verify-required", flagUserPresent | flagUserVerified, false, true},
			{"counter not the signed one", "", flagUserPresent, true, false},
		} {
			t.Run(typ+"/"+tc.name, func(t *testing.T) {
				w := newWorld(t)
				key := newSKSigner(t, typ, tc.flags)
				key.lie = tc.lie
				w.authorize(authLine(tc.opts, key.PublicKey()))
				c, ch := startRun(t, w.cfg)
				c.startService()
				wantPKOK(t, c.query(typ, key.PublicKey()), typ, key.PublicKey())
				if p := c.signed(typ, key); tc.ok {
					wantSuccess(t, p, ch)
				} else {
					wantFailure(t, p, "publickey")
				}
			})
		}
	}
}

// TestSecurityKeyVerifierAgreesWithXCrypto checks verifySK against
// x/crypto/ssh's own verifier on signatures both accept.
func TestSecurityKeyVerifierAgreesWithXCrypto(t *testing.T) {
	for _, typ := range []string{skEd25519, skECDSA} {
		s := newSKSigner(t, typ, flagUserPresent|flagUserVerified)
		data := []byte("signed data")
		xs, _ := s.Sign(nil, data)
		if err := s.pub.Verify(data, xs); err != nil {
			t.Fatalf("%s: x/crypto rejects the test signature: %v", typ, err)
		}
		sig := &signature{Format: xs.Format, Blob: xs.Blob, Rest: xs.Rest}
		if f, err := verifySK(s.pub, data, sig); err != nil || f != flagUserPresent|flagUserVerified {
			t.Fatalf("%s: verifySK %v %v", typ, f, err)
		}
		if _, err := verifySK(s.pub, []byte("other data"), sig); err == nil {
			t.Fatalf("%s: verifySK accepts a signature over other data", typ)
		}
		sig.Rest = append(sig.Rest, 0)
		if _, err := verifySK(s.pub, data, sig); err == nil {
			t.Fatalf("%s: verifySK accepts trailing bytes", typ)
		}
	}
}

func TestSecurityKeyCertificateNoTouch(t *testing.T) {
	for _, ext := range []bool{false, true} {
		w := newWorld(t)
		ca := newEd25519(t)
		w.trustCA(ca)
		signer, cert := makeCert(t, ca, newSKSigner(t, skEd25519, 0), func(c *ssh.Certificate) {
			if ext {
				c.Extensions["no-touch-required"] = ""
			}
		})
		c, ch := startRun(t, w.cfg)
		c.startService()
		if p := c.signed(cert.Type(), signer); ext {
			wantSuccess(t, p, ch)
		} else {
			wantFailure(t, p, "publickey")
		}
	}
}
