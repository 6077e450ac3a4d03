package transport

import (
	"fmt"

	"github.com/offload/offload/sshd/wire"
)

// A cipher.AEAD or cipher.Stream cannot return an error, so a provider
// whose device fails mid-packet with no fallback (a PKCS #11 token with
// NoFallback, say) panics. That ends this connection, not the server:
// the packet codecs run the cipher under a recover, and the panic becomes
// a ProviderError, which fails the connection like any other error.

// ProviderError reports a cipher that panicked while sealing or opening a
// packet.
type ProviderError struct {
	Op    string // "seal", "open" or "decrypt length"
	Seq   uint32
	Panic any
}

func (e *ProviderError) Error() string {
	return fmt.Sprintf("transport: crypto provider failed to %s packet %d: %v", e.Op, e.Seq, e.Panic)
}

// seal runs c.seal, turning a panic into a *ProviderError.
func guardedSeal(c packetCipher, seq uint32, pkt []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &ProviderError{Op: "seal", Seq: seq, Panic: r}
		}
	}()
	return c.seal(seq, pkt), nil
}

// guardedOpen runs c.open; a panic is a *ProviderError inside a
// DisconnectError (the peer is told the application gave up).
func guardedOpen(c packetCipher, seq uint32, pkt []byte) (body []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = providerDisconnect(&ProviderError{Op: "open", Seq: seq, Panic: r})
		}
	}()
	return c.open(seq, pkt)
}

// guardedLength runs c.decryptLength as guardedOpen runs c.open.
func guardedLength(c packetCipher, seq uint32, hdr []byte) (n uint32, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = providerDisconnect(&ProviderError{Op: "decrypt length", Seq: seq, Panic: r})
		}
	}()
	return c.decryptLength(seq, hdr), nil
}

func providerDisconnect(pe *ProviderError) error {
	return &DisconnectError{Reason: wire.DisconnectByApplication, Message: "crypto provider failed", Err: pe}
}
