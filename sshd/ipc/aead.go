package ipc

import (
	"fmt"

	"github.com/offload/offload/sshd/wire"
)

// Bulk crypto on a token from a child. The PKCS #11 module lives only in
// the monitor, so a post-auth process whose packet cipher the policy puts
// on a token (the T2-style crypto unit) reaches it through the monitor,
// as Solaris processes reached their crypto units through the kernel
// framework: each packet is one request. The PIN never leaves the
// monitor. Only AEADs travel this way (AES-GCM is what tokens offer).
// The child's side is sshd/remote.Provider, the monitor's
// monitor.AEADServer.

// AEADNew asks the monitor for an AEAD of Alg under Key from its own
// registry; the reply is an AEADHandle.
type AEADNew struct {
	Alg string
	Key []byte
}

// Marshal encodes m.
func (m *AEADNew) Marshal() []byte { return wire.AppendBytes(wire.AppendString(nil, m.Alg), m.Key) }

// ParseAEADNew decodes an AEADNew.
func ParseAEADNew(p []byte) (*AEADNew, error) {
	d := newDecoder(p)
	m := &AEADNew{Alg: d.string("algorithm", maxName), Key: d.bytes("key", maxKey)}
	return m, d.done(TypeAEADNew)
}

// MaxLanes bounds the lanes of an AEAD the monitor serves (as
// provider.MaxLanes does; sshd/remote checks the two agree).
const MaxLanes = 64

// AEADCreated is the reply to AEADNew: the AEAD's handle, how many calls
// it serves at once (provider.Lanes; 1 to MaxLanes), and where
// it lives (the token's label and serial, and the slot; empty for an
// AEAD the monitor serves in Go), for the process's provenance.
type AEADCreated struct {
	Handle uint32
	Lanes  uint32
	Token  string
	Serial string
	Slot   uint32
}

// Marshal encodes m.
func (m *AEADCreated) Marshal() []byte {
	b := wire.AppendUint32(wire.AppendUint32(nil, m.Handle), m.Lanes)
	b = wire.AppendString(wire.AppendString(b, m.Token), m.Serial)
	return wire.AppendUint32(b, m.Slot)
}

// ParseAEADCreated decodes an AEADCreated.
func ParseAEADCreated(p []byte) (*AEADCreated, error) {
	d := newDecoder(p)
	m := &AEADCreated{Handle: d.Uint32("handle"), Lanes: d.Uint32("lanes"),
		Token: d.string("token", maxName), Serial: d.string("serial", maxName), Slot: d.Uint32("slot")}
	if err := d.done(TypeAEADNew); err != nil {
		return nil, err
	}
	if m.Lanes < 1 || m.Lanes > MaxLanes {
		return nil, &ProtocolError{Type: TypeAEADNew, Err: fmt.Errorf("%d lanes, want 1 to %d", m.Lanes, MaxLanes)}
	}
	return m, nil
}

// AEADHandle names an AEAD the monitor holds for a child (the subject of
// AEADClose).
type AEADHandle struct{ Handle uint32 }

// Marshal encodes m.
func (m *AEADHandle) Marshal() []byte { return wire.AppendUint32(nil, m.Handle) }

// ParseAEADHandle decodes an AEADHandle.
func ParseAEADHandle(p []byte) (*AEADHandle, error) {
	d := newDecoder(p)
	m := &AEADHandle{Handle: d.Uint32("handle")}
	return m, d.done(TypeAEADClose)
}

// AEADCall is one Seal (TypeAEADSeal) or Open (TypeAEADOpen); the reply
// is the output.
type AEADCall struct {
	Handle          uint32
	Nonce, AD, Data []byte
}

// Marshal encodes m.
func (m *AEADCall) Marshal() []byte {
	b := wire.AppendUint32(nil, m.Handle)
	b = wire.AppendBytes(b, m.Nonce)
	b = wire.AppendBytes(b, m.AD)
	return wire.AppendBytes(b, m.Data)
}

// ParseAEADCall decodes an AEADCall.
func ParseAEADCall(p []byte) (*AEADCall, error) {
	d := newDecoder(p)
	m := &AEADCall{Handle: d.Uint32("handle"), Nonce: d.bytes("nonce", maxNonce), AD: d.bytes("ad", maxAD),
		Data: d.bytes("data", maxAEADData)}
	return m, d.done(TypeAEADSeal)
}

const (
	maxKey      = 64
	maxNonce    = 32
	maxAD       = 64
	maxAEADData = MaxMessage - 256
)
