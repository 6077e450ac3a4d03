package transport

import (
	"bytes"
	"crypto/ecdh"
	"crypto/mlkem"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/wire"
)

// hybridClient is the client side of one hybrid method, written apart
// from the server's code: its encapsulation key and ECDH share, and how
// it turns the server's reply into K_PQ || K_CL.
type hybridClient struct {
	name   string
	newH   func() hash.Hash
	init   []byte
	finish func(t *testing.T, reply []byte) []byte
}

func mlkemClient(t *testing.T, name string, curve ecdh.Curve, newH func() hash.Hash) hybridClient {
	dk, err := mlkem.GenerateKey768()
	if err != nil {
		t.Fatal(err)
	}
	ec, _ := curve.GenerateKey(rand.Reader)
	return hybridClient{name: name, newH: newH,
		init: append(dk.EncapsulationKey().Bytes(), ec.PublicKey().Bytes()...),
		finish: func(t *testing.T, reply []byte) []byte {
			kpq, err := dk.Decapsulate(reply[:mlkem.CiphertextSize768])
			if err != nil {
				t.Fatal(err)
			}
			peer, err := curve.NewPublicKey(reply[mlkem.CiphertextSize768:])
			if err != nil {
				t.Fatal(err)
			}
			kcl, _ := ec.ECDH(peer)
			return append(kpq, kcl...)
		}}
}

func sntrupClient(t *testing.T, name string) hybridClient {
	const ctSize = 1039
	d, err := testRegistry(t).Decapsulator("sntrup761")
	if err != nil {
		t.Fatal(err)
	}
	ec, _ := ecdh.X25519().GenerateKey(rand.Reader)
	return hybridClient{name: name, newH: sha512.New,
		init: append(d.EncapsulationKey(), ec.PublicKey().Bytes()...),
		finish: func(t *testing.T, reply []byte) []byte {
			kpq, err := d.Decapsulate(reply[:ctSize])
			if err != nil {
				t.Fatal(err)
			}
			peer, _ := ecdh.X25519().NewPublicKey(reply[ctSize:])
			kcl, _ := ec.ECDH(peer)
			return append(kpq, kcl...)
		}}
}

// TestHybridKex runs each hybrid method against the server with an
// independent client: the host-key signature must verify over the H the
// client computes from its own K = HASH(K_PQ || K_CL).
func TestHybridKex(t *testing.T) {
	for _, hc := range []hybridClient{
		mlkemClient(t, "mlkem768x25519-sha256", ecdh.X25519(), sha256.New),
		mlkemClient(t, "mlkem768nistp256-sha256", ecdh.P256(), sha256.New),
		sntrupClient(t, "sntrup761x25519-sha512"),
		sntrupClient(t, "sntrup761x25519-sha512@openssh.com"),
	} {
		t.Run(hc.name, func(t *testing.T) {
			ts := newTestServer(t, &Config{KexAlgorithms: []string{hc.name}})
			c := dialRaw(t, ts)
			c.version("SSH-2.0-raw\r\n")
			iC := clientKexInit(hc.name).marshal()
			c.send(iC)
			iS := bytes.Clone(c.expect(wire.MsgKexInit))
			c.send(wire.AppendBytes([]byte{wire.MsgKexECDHInit}, hc.init))
			p := c.expect(wire.MsgKexECDHReply)
			r := wire.NewReader(p[1:])
			kS, qS, sigBlob := r.Bytes("K_S"), r.Bytes("Q_S"), r.Bytes("sig")
			if err := r.Done(); err != nil {
				t.Fatal(err)
			}
			kh := hc.newH()
			kh.Write(hc.finish(t, qS))
			K := wire.AppendBytes(nil, kh.Sum(nil))
			var b []byte
			for _, v := range [][]byte{[]byte("SSH-2.0-raw"), ts.srv.version[:len(ts.srv.version)-2], iC, iS, kS, hc.init, qS} {
				b = wire.AppendBytes(b, v)
			}
			h := hc.newH()
			h.Write(append(b, K...))
			H := h.Sum(nil)
			pub, err := ssh.ParsePublicKey(kS)
			if err != nil {
				t.Fatal(err)
			}
			var sig ssh.Signature
			if err := ssh.Unmarshal(sigBlob, &sig); err != nil {
				t.Fatal(err)
			}
			if err := pub.Verify(H, &sig); err != nil {
				t.Fatalf("host signature over the client's H: %v", err)
			}
			if bytes.Equal(qS, hc.init) {
				t.Fatal("reply echoes the init")
			}
		})
	}
}
