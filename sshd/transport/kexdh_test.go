package transport

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/offload/offload/sshd/wire"
)

func gexRequest(lo, n, hi uint32) []byte {
	return wire.AppendUint32(wire.AppendUint32(wire.AppendUint32([]byte{msgKexGexRequest}, lo), n), hi)
}

func mpintMsg(t byte, v *big.Int) []byte { return wire.AppendMPInt([]byte{t}, v.Bytes()) }

// TestGroupExchange: a request is answered with a group in the clamped
// bounds; bad sizes, bad e values and messages out of order are refused.
func TestGroupExchange(t *testing.T) {
	const gex = "diffie-hellman-group-exchange-sha256"
	ts := newTestServer(t, &Config{KexAlgorithms: []string{gex, "diffie-hellman-group14-sha256"}})
	start := func(t *testing.T, kex string) *rawClient {
		c := dialRaw(t, ts)
		c.version("SSH-2.0-raw\r\n")
		c.send(clientKexInit(kex).marshal())
		c.expect(wire.MsgKexInit)
		return c
	}
	t.Run("group-in-bounds", func(t *testing.T) {
		for _, req := range [][3]uint32{{2048, 3072, 8192}, {1024, 1024, 2048}, {4096, 8192, 8192}, {1024, 4096, 100000}} {
			c := start(t, gex)
			c.send(gexRequest(req[0], req[1], req[2]))
			r := wire.NewReader(c.expect(msgKexGexGroup)[1:])
			p, g := r.MPInt("p"), r.MPInt("g")
			if r.Done() != nil || p.BitLen() < max(int(req[0]), 2048) || p.BitLen() > min(int(req[2]), 8192) || g.Cmp(big.NewInt(1)) <= 0 {
				t.Errorf("request %v: a %d-bit group, g %v", req, p.BitLen(), g)
			}
			c.send(mpintMsg(msgKexGexInit, big.NewInt(1)))
			c.expectDisconnect(wire.DisconnectKeyExchangeFailed)
		}
	})
	t.Run("bad-sizes", func(t *testing.T) {
		for _, req := range [][3]uint32{{4096, 2048, 8192}, {2048, 8192, 4096}, {100, 200, 1024}, {9000, 9000, 9000}} {
			c := start(t, gex)
			c.send(gexRequest(req[0], req[1], req[2]))
			c.expectDisconnect(wire.DisconnectKeyExchangeFailed)
		}
	})
	t.Run("e-not-below-p", func(t *testing.T) {
		c := start(t, gex)
		c.send(gexRequest(2048, 2048, 2048))
		r := wire.NewReader(c.expect(msgKexGexGroup)[1:])
		p := r.MPInt("p")
		c.send(mpintMsg(msgKexGexInit, p))
		c.expectDisconnect(wire.DisconnectKeyExchangeFailed)
	})
	t.Run("init-before-request", func(t *testing.T) {
		c := start(t, gex)
		c.send(mpintMsg(msgKexGexInit, big.NewInt(12345)))
		c.expectDisconnect(wire.DisconnectProtocolError)
	})
	t.Run("non-minimal-mpint", func(t *testing.T) {
		c := start(t, "diffie-hellman-group14-sha256")
		c.send(wire.AppendBytes([]byte{msgKexDHInit}, []byte{0, 0x12, 0x34}))
		c.expectDisconnect(wire.DisconnectKeyExchangeFailed)
	})
	t.Run("dh-e-one", func(t *testing.T) {
		c := start(t, "diffie-hellman-group14-sha256")
		c.send(mpintMsg(msgKexDHInit, big.NewInt(1)))
		c.expectDisconnect(wire.DisconnectKeyExchangeFailed)
	})
}

// FuzzGexInit feeds hostile KEX_DH_GEX_INIT messages to the second step
// of diffie-hellman-group-exchange-sha256, after a valid request (the
// single-message fuzz target never gets past the first step).
func FuzzGexInit(f *testing.F) {
	srv := fuzzServer(f)
	spec := findKex("diffie-hellman-group-exchange-sha256")
	request := gexRequest(2048, 2048, 8192)
	f.Add([]byte{32, 0, 0, 0, 1, 2})
	f.Add(append([]byte{32, 0, 0, 1, 0}, bytes.Repeat([]byte{0xff}, 256)...))
	f.Add([]byte{32, 0, 0, 0, 1, 0x80})
	f.Fuzz(func(t *testing.T, in []byte) {
		k := &kexRun{a: &algorithms{kex: spec, hostKey: "ssh-ed25519"},
			m: handshakeMagics{vC: []byte("SSH-2.0-x"), vS: []byte("SSH-2.0-y")}, signer: srv.signer}
		steps := spec.method.steps
		if _, err := steps[0].handle(srv, k, request); err != nil {
			t.Fatalf("valid GEX request: %v", err)
		}
		reply, err := steps[1].handle(srv, k, in)
		if err == nil && (len(reply) == 0 || k.res == nil) {
			t.Fatalf("accepted without a reply and result")
		}
	})
}
