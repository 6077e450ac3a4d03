package hostile

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/offload/offload/sshd/wire"
	"github.com/offload/offload/test/hostile/rawclient"
)

// suite is a cipher (and MAC) the raw client can speak.
type suite struct {
	name string
	opts rawclient.KexOptions
}

var suites = []suite{
	{rawclient.AES128GCM, rawclient.KexOptions{Cipher: rawclient.AES128GCM}},
	{rawclient.ChaCha, rawclient.KexOptions{Cipher: rawclient.ChaCha}},
	{rawclient.AES128CTR + "+etm", rawclient.KexOptions{Cipher: rawclient.AES128CTR, MAC: rawclient.HMACETM}},
	{rawclient.AES128CTR + "+" + rawclient.HMACEaM, rawclient.KexOptions{Cipher: rawclient.AES128CTR, MAC: rawclient.HMACEaM}},
}

// ignoreMsg is an SSH_MSG_IGNORE payload of n bytes in total.
func ignoreMsg(n int) []byte {
	return wire.AppendBytes([]byte{wire.MsgIgnore}, make([]byte, max(n-5, 0)))
}

// withLength returns pkt with its length field replaced.
func withLength(pkt []byte, n uint32) []byte {
	out := bytes.Clone(pkt)
	binary.BigEndian.PutUint32(out, n)
	return out
}

// TestFramingCleartext breaks the binary packet protocol before the first
// key exchange, where packets are in the clear.
func TestFramingCleartext(t *testing.T) {
	e := newEnv(t, nil)
	good := rawclient.Packet(ignoreMsg(11), 4) // 4+1+11+4 = 20: unaligned on purpose below
	aligned := rawclient.Packet(ignoreMsg(11), 8)
	cases := []struct {
		name string
		raw  []byte
	}{
		{"length-0", withLength(aligned, 0)},
		{"length-1", withLength(aligned, 1)},
		{"length-huge", withLength(aligned, 0xfffffff0)},
		{"length-256KiB+8", withLength(aligned, 256<<10+8)},
		{"unaligned", good},
		{"padding-3", padded(ignoreMsg(12), 3)},
		{"padding-longer-than-packet", padField(aligned, 200)},
		{"padding-whole-packet", padField(aligned, byte(len(aligned)-5))},
	}
	for _, c := range cases {
		e.run(c.name, func(t *testing.T) {
			rc := e.versioned(t)
			if err := rc.WriteRaw(c.raw); err != nil {
				t.Fatal(err)
			}
			expectDisconnect(t, rc, wire.DisconnectProtocolError)
		})
	}
	e.run("truncated-then-eof", func(t *testing.T) {
		rc := e.versioned(t)
		rc.WriteRaw(aligned[:len(aligned)-3])
		rc.NC.(interface{ CloseWrite() error }).CloseWrite()
		expectClosed(t, rc, replyTimeout)
	})
}

// padded builds a packet with pad bytes of padding and the length the
// payload really has, aligned on 8 by the caller's choice of sizes.
func padded(payload []byte, pad int) []byte { return rawclient.Packet(payload, pad) }

// padField returns pkt with its padding-length byte replaced.
func padField(pkt []byte, pad byte) []byte {
	out := bytes.Clone(pkt)
	out[4] = pad
	return out
}

// TestFramingEncrypted breaks the framing after the first key exchange,
// under every cipher, in ways only the keys holder can produce: the
// length is encrypted or authenticated, so each case is sealed properly
// around the broken field.
func TestFramingEncrypted(t *testing.T) {
	e := newEnv(t, nil)
	for _, su := range suites {
		c, o := su.name, &su.opts
		e.run(c+"/bad-mac", func(t *testing.T) {
			rc := e.keyed(t, o)
			pkt := rc.Seal(rawclient.Packet(ignoreMsg(27), rc.Padding(27)))
			pkt[len(pkt)-1] ^= 0x80
			rc.WriteRaw(pkt)
			expectDisconnect(t, rc, wire.DisconnectMACError)
		})
		e.run(c+"/bad-mac-after-rekey", func(t *testing.T) {
			rc := e.keyed(t, o)
			if err := rc.Rekey(o); err != nil {
				t.Fatal(err)
			}
			pkt := rc.Seal(rawclient.Packet(ignoreMsg(27), rc.Padding(27)))
			pkt[len(pkt)-1] ^= 0x80
			rc.WriteRaw(pkt)
			expectDisconnect(t, rc, wire.DisconnectMACError)
		})
		e.run(c+"/flipped-ciphertext", func(t *testing.T) {
			rc := e.keyed(t, o)
			pkt := rc.Seal(rawclient.Packet(ignoreMsg(59), rc.Padding(59)))
			pkt[9] ^= 0x01
			rc.WriteRaw(pkt)
			expectDisconnect(t, rc, wire.DisconnectMACError)
		})
		e.run(c+"/replayed-packet", func(t *testing.T) {
			rc := e.keyed(t, o)
			pkt := rc.Seal(rawclient.Packet(ignoreMsg(27), rc.Padding(27)))
			rc.WriteRaw(pkt)
			rc.WriteRaw(pkt)
			// Under chacha20-poly1305 the replayed length decrypts
			// to garbage first: a length error is as right.
			expectDisconnect(t, rc, wire.DisconnectMACError, wire.DisconnectProtocolError)
		})
		e.run(c+"/length-0", func(t *testing.T) {
			rc := e.keyed(t, o)
			rc.WriteRaw(rc.Seal(withLength(rawclient.Packet(ignoreMsg(27), rc.Padding(27)), 0)))
			expectDisconnect(t, rc, wire.DisconnectProtocolError)
		})
		e.run(c+"/length-huge", func(t *testing.T) {
			rc := e.keyed(t, o)
			rc.WriteRaw(rc.Seal(withLength(rawclient.Packet(ignoreMsg(27), rc.Padding(27)), 0x7ffffff0)))
			expectDisconnect(t, rc, wire.DisconnectProtocolError)
		})
		e.run(c+"/unaligned", func(t *testing.T) {
			rc := e.keyed(t, o)
			rc.WriteRaw(rc.Seal(rawclient.Packet(ignoreMsg(27), rc.Padding(27)+1)))
			expectDisconnect(t, rc, wire.DisconnectProtocolError)
		})
		e.run(c+"/padding-2", func(t *testing.T) {
			rc := e.keyed(t, o)
			// 1 + 13 + 2 = 16: aligned for every cipher, padding too short.
			rc.WriteRaw(rc.Seal(rawclient.Packet(ignoreMsg(13), 2)))
			expectDisconnect(t, rc, wire.DisconnectProtocolError)
		})
		e.run(c+"/padding-beyond-packet", func(t *testing.T) {
			rc := e.keyed(t, o)
			rc.WriteRaw(rc.Seal(padField(rawclient.Packet(ignoreMsg(27), rc.Padding(27)), 250)))
			expectDisconnect(t, rc, wire.DisconnectProtocolError)
		})
	}
}
