package ipc

import "github.com/offload/offload/sshd/wire"

// AEADOrigin tells the monitor which packets an AEAD it holds for a
// post-auth process protects (transport.OriginNoter): the connection,
// the direction, and the sequence number of the packet under Nonce, so
// that the monitor's lines about the AEAD (a token fallback) name the
// connection and the packet as the process's own lines do. The
// connection id leads, as in every message that names a connection: the
// monitor checks that the connection is the process's.
type AEADOrigin struct {
	ConnID uint64
	Handle uint32
	Out    bool // the server-to-client direction
	Seq    uint32
	Nonce  []byte
}

// Marshal encodes m.
func (m *AEADOrigin) Marshal() []byte {
	b := wire.AppendUint32(wire.AppendUint64(nil, m.ConnID), m.Handle)
	b = wire.AppendUint32(wire.AppendBool(b, m.Out), m.Seq)
	return wire.AppendBytes(b, m.Nonce)
}

// ParseAEADOrigin decodes an AEADOrigin.
func ParseAEADOrigin(p []byte) (*AEADOrigin, error) {
	d := newDecoder(p)
	m := &AEADOrigin{ConnID: d.Uint64("conn id"), Handle: d.Uint32("handle"), Out: d.boolean("direction"),
		Seq: d.Uint32("seq"), Nonce: d.bytes("nonce", maxNonce)}
	return m, d.done(TypeAEADOrigin)
}
