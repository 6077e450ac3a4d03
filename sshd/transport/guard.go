package transport

import (
	"fmt"

	"github.com/offload/offload/sshd/wire"
)

// A cipher.AEAD or cipher.Stream cannot return an error, so a provider
// whose device fails mid-packet with no fallback (a PKCS #11 token with
// NoFallback, say) either reports it through provider.FallibleAEAD, which
// the GCM cipher uses (fallibleSealer), or panics. Either ends this
// connection, not the server: the fault becomes a ProviderError, and the
// packet codecs run the other ciphers under a recover.

// ProviderError reports a cipher that failed (Err) or panicked (Panic)
// while sealing or opening a packet.
type ProviderError struct {
	Op    string // "seal", "open" or "decrypt length"
	Seq   uint32
	Err   error // the provider's error, when it returned one
	Panic any   // what it panicked with, otherwise
}

func (e *ProviderError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("transport: crypto provider failed to %s packet %d: %v", e.Op, e.Seq, e.Err)
	}
	return fmt.Sprintf("transport: crypto provider failed to %s packet %d: %v", e.Op, e.Seq, e.Panic)
}

func (e *ProviderError) Unwrap() error { return e.Err }

// fallibleSealer is a packet cipher whose seal reports a provider fault
// as an error rather than a panic.
type fallibleSealer interface {
	sealErr(seq uint32, pkt []byte) ([]byte, error)
}

// seal runs c.seal, turning a fault or a panic into a *ProviderError.
func guardedSeal(c packetCipher, seq uint32, pkt []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &ProviderError{Op: "seal", Seq: seq, Panic: r}
		}
	}()
	if fs, ok := c.(fallibleSealer); ok {
		if out, err = fs.sealErr(seq, pkt); err != nil {
			return nil, &ProviderError{Op: "seal", Seq: seq, Err: err}
		}
		return out, nil
	}
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
