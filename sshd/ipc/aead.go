package ipc

import (
	"context"
	"crypto/cipher"
	"fmt"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/wire"
)

// Bulk crypto on a token from a child. The PKCS #11 module lives only in
// the monitor, so a post-auth process whose packet cipher the policy puts
// on a token (the T2-style crypto unit) reaches it through the monitor,
// as Solaris processes reached their crypto units through the kernel
// framework: each packet is one request. The PIN never leaves the
// monitor. Only AEADs travel this way (AES-GCM is what tokens offer).

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

// AEADCreated is the reply to AEADNew: the AEAD's handle, how many calls
// it serves at once (provider.Lanes; 1 to provider.MaxLanes), and where
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
	if m.Lanes < 1 || m.Lanes > provider.MaxLanes {
		return nil, &ProtocolError{Type: TypeAEADNew, Err: fmt.Errorf("%d lanes, want 1 to %d", m.Lanes, provider.MaxLanes)}
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

// RemoteProvider is a child's stand-in for a provider only the monitor
// has: it serves the AEADs of Algorithms through the monitor. Its name is
// that of the provider it stands for, so that policy pins, logs and
// provenance name the provider that does the work.
type RemoteProvider struct {
	Peer       *Peer
	ProvName   string
	Algorithms []string
}

var _ provider.AEADProvider = (*RemoteProvider)(nil)

// Name is the name of the monitor's provider.
func (r *RemoteProvider) Name() string { return r.ProvName }

// Kind is hardware: the work is done by the monitor's device.
func (r *RemoteProvider) Kind() provider.Kind { return provider.KindHardware }

// Capabilities lists the AEADs the monitor serves.
func (r *RemoteProvider) Capabilities() []provider.Capability {
	var out []provider.Capability
	for _, a := range r.Algorithms {
		out = append(out, provider.Capability{Algorithm: a, Ops: provider.OpSeal | provider.OpOpen, Flags: provider.FlagHardware})
	}
	return out
}

// Close does nothing: the AEADs are closed one by one.
func (r *RemoteProvider) Close() error { return nil }

// NewAEAD asks the monitor for an AEAD under key.
func (r *RemoteProvider) NewAEAD(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	ctx, cancel := context.WithTimeout(context.Background(), SignTimeout)
	defer cancel()
	b, err := r.Peer.Call(ctx, TypeAEADNew, (&AEADNew{Alg: alg.Name, Key: key}).Marshal())
	if err != nil {
		return nil, err
	}
	h, err := ParseAEADCreated(b)
	if err != nil {
		return nil, err
	}
	return &remoteAEAD{peer: r.Peer, handle: h.Handle, alg: alg, lanes: int(h.Lanes),
		prov: provider.Provenance{Token: h.Token, Serial: h.Serial, Slot: uint(h.Slot), Detail: "through the monitor"}}, nil
}

var (
	_ provider.FallibleAEAD   = (*remoteAEAD)(nil)
	_ provider.ConcurrentAEAD = (*remoteAEAD)(nil)
	_ provider.Provenancer    = (*remoteAEAD)(nil)
)

// remoteAEAD is an AEAD held by the monitor. It is safe for concurrent
// use: each call is a request of its own, and the monitor serves them at
// once up to the lanes its AEAD has.
type remoteAEAD struct {
	peer   *Peer
	handle uint32
	alg    *provider.Algorithm
	lanes  int
	prov   provider.Provenance // where the monitor serves it, as it said at creation
}

// Provenance says where the monitor serves the AEAD (its token and slot),
// as it said when it made it; the registry adds the provider's name.
func (a *remoteAEAD) Provenance() provider.Provenance { return a.prov }

func (a *remoteAEAD) NonceSize() int { return a.alg.NonceSize }
func (a *remoteAEAD) Overhead() int  { return a.alg.TagSize }

// Lanes is how many calls the monitor's AEAD serves at once: the
// transport keeps that many packets in flight, which also hides the
// round trip to the monitor.
func (a *remoteAEAD) Lanes() int { return a.lanes }

// Seal asks the monitor to seal; cipher.AEAD cannot return an error, so a
// failure panics, which the transport turns into the end of the
// connection (see transport.ProviderError).
func (a *remoteAEAD) Seal(dst, nonce, plaintext, ad []byte) []byte {
	out, err := a.call(TypeAEADSeal, nonce, ad, plaintext)
	if err != nil {
		panic(fmt.Errorf("ipc: seal through the monitor: %w", err))
	}
	return append(dst, out...)
}

// SealErr is Seal reporting a failure as an error (provider.FallibleAEAD),
// which the transport uses.
func (a *remoteAEAD) SealErr(dst, nonce, plaintext, ad []byte) ([]byte, error) {
	out, err := a.call(TypeAEADSeal, nonce, ad, plaintext)
	if err != nil {
		return nil, fmt.Errorf("ipc: seal through the monitor: %w", err)
	}
	return append(dst, out...), nil
}

// OpenErr is Open (provider.FallibleAEAD).
func (a *remoteAEAD) OpenErr(dst, nonce, ciphertext, ad []byte) ([]byte, error) {
	return a.Open(dst, nonce, ciphertext, ad)
}

func (a *remoteAEAD) Open(dst, nonce, ciphertext, ad []byte) ([]byte, error) {
	out, err := a.call(TypeAEADOpen, nonce, ad, ciphertext)
	if err != nil {
		return nil, err
	}
	return append(dst, out...), nil
}

func (a *remoteAEAD) call(t Type, nonce, ad, data []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), SignTimeout)
	defer cancel()
	return a.peer.Call(ctx, t, (&AEADCall{Handle: a.handle, Nonce: nonce, AD: ad, Data: data}).Marshal())
}

// Close releases the monitor's AEAD.
func (a *remoteAEAD) Close() error {
	return a.peer.Notify(TypeAEADClose, (&AEADHandle{Handle: a.handle}).Marshal())
}
