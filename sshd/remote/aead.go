package remote

import (
	"context"
	"crypto/cipher"
	"fmt"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/ipc"
)

// Provider is a child's stand-in for a provider only the monitor has:
// it serves the AEADs of Algorithms through the monitor. Its name is
// that of the provider it stands for, so that policy pins, logs and
// provenance name the provider that does the work.
type Provider struct {
	Peer       *ipc.Peer
	ProvName   string
	Algorithms []string
}

var _ provider.AEADProvider = (*Provider)(nil)

// Name is the name of the monitor's provider.
func (r *Provider) Name() string { return r.ProvName }

// Kind is hardware: the work is done by the monitor's device.
func (r *Provider) Kind() provider.Kind { return provider.KindHardware }

// Capabilities lists the AEADs the monitor serves.
func (r *Provider) Capabilities() []provider.Capability {
	var out []provider.Capability
	for _, a := range r.Algorithms {
		out = append(out, provider.Capability{Algorithm: a, Ops: provider.OpSeal | provider.OpOpen, Flags: provider.FlagHardware})
	}
	return out
}

// Close does nothing: the AEADs are closed one by one.
func (r *Provider) Close() error { return nil }

// NewAEAD asks the monitor for an AEAD under key.
func (r *Provider) NewAEAD(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ipc.SignTimeout)
	defer cancel()
	b, err := r.Peer.Call(ctx, ipc.TypeAEADNew, (&ipc.AEADNew{Alg: alg.Name, Key: key}).Marshal())
	if err != nil {
		return nil, err
	}
	h, err := ipc.ParseAEADCreated(b)
	if err != nil {
		return nil, err
	}
	return &aead{peer: r.Peer, handle: h.Handle, alg: alg, lanes: int(h.Lanes),
		prov: provider.Provenance{Token: h.Token, Serial: h.Serial, Slot: uint(h.Slot), Detail: "through the monitor"}}, nil
}

var (
	_ provider.FallibleAEAD   = (*aead)(nil)
	_ provider.ConcurrentAEAD = (*aead)(nil)
	_ provider.Provenancer    = (*aead)(nil)
)

// aead is an AEAD held by the monitor. It is safe for concurrent use:
// each call is a request of its own, and the monitor serves them at once
// up to the lanes its AEAD has.
type aead struct {
	peer   *ipc.Peer
	handle uint32
	alg    *provider.Algorithm
	lanes  int
	prov   provider.Provenance // where the monitor serves it, as it said at creation
}

// Provenance says where the monitor serves the AEAD (its token and slot),
// as it said when it made it; the registry adds the provider's name.
func (a *aead) Provenance() provider.Provenance { return a.prov }

func (a *aead) NonceSize() int { return a.alg.NonceSize }
func (a *aead) Overhead() int  { return a.alg.TagSize }

// Lanes is how many calls the monitor's AEAD serves at once: the
// transport keeps that many packets in flight, which also hides the
// round trip to the monitor.
func (a *aead) Lanes() int { return a.lanes }

// Seal asks the monitor to seal; cipher.AEAD cannot return an error, so a
// failure panics, which the transport turns into the end of the
// connection (see transport.ProviderError).
func (a *aead) Seal(dst, nonce, plaintext, ad []byte) []byte {
	out, err := a.call(ipc.TypeAEADSeal, nonce, ad, plaintext)
	if err != nil {
		panic(fmt.Errorf("remote: seal through the monitor: %w", err))
	}
	return append(dst, out...)
}

// SealErr is Seal reporting a failure as an error (provider.FallibleAEAD),
// which the transport uses.
func (a *aead) SealErr(dst, nonce, plaintext, ad []byte) ([]byte, error) {
	out, err := a.call(ipc.TypeAEADSeal, nonce, ad, plaintext)
	if err != nil {
		return nil, fmt.Errorf("remote: seal through the monitor: %w", err)
	}
	return append(dst, out...), nil
}

// OpenErr is Open (provider.FallibleAEAD).
func (a *aead) OpenErr(dst, nonce, ciphertext, ad []byte) ([]byte, error) {
	return a.Open(dst, nonce, ciphertext, ad)
}

func (a *aead) Open(dst, nonce, ciphertext, ad []byte) ([]byte, error) {
	out, err := a.call(ipc.TypeAEADOpen, nonce, ad, ciphertext)
	if err != nil {
		return nil, err
	}
	return append(dst, out...), nil
}

func (a *aead) call(t ipc.Type, nonce, ad, data []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ipc.SignTimeout)
	defer cancel()
	return a.peer.Call(ctx, t, (&ipc.AEADCall{Handle: a.handle, Nonce: nonce, AD: ad, Data: data}).Marshal())
}

// Close releases the monitor's AEAD.
func (a *aead) Close() error {
	return a.peer.Notify(ipc.TypeAEADClose, (&ipc.AEADHandle{Handle: a.handle}).Marshal())
}

// NoteOrigin tells the monitor which packets the AEAD protects
// (transport.OriginNoter). It is a notification: when it cannot be sent,
// the connection goes on and only the monitor's lines lack the origin.
func (a *aead) NoteOrigin(conn uint64, direction string, seq uint32, nonce []byte) {
	m := &ipc.AEADOrigin{ConnID: conn, Handle: a.handle, Out: direction == "out", Seq: seq, Nonce: nonce}
	a.peer.Notify(ipc.TypeAEADOrigin, m.Marshal())
}
