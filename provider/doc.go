// Package provider is offload's algorithm catalog, provider interfaces and
// registry: it hands out cipher.AEAD, crypto.Signer, key agreement, KEMs,
// MACs and hashes from whichever provider the policy and the measurements
// choose.
//
// # Catalog
//
// Every algorithm offload knows is one row of a table (see Lookup and
// Algorithms) with its family and sizes. No other package repeats a size.
//
// # Providers
//
// A Provider has a name, a Kind (software, cpu, hardware) and a list of
// Capabilities. What it can build is told by optional interfaces checked by
// type assertion, as io.WriterTo is: AEADProvider, StreamProvider,
// BlockProvider, KeyStreamProvider, MACProvider, OneTimeMACProvider, SignerProvider,
// KeyGenerator, KeyAgreementProvider, KEMProvider and HashProvider.
//
// # Registry and policy
//
// A Registry is an instance (there is no global one). Its Policy has a
// Mode (fastest, prefer-hardware, software-only), per-algorithm pins in the
// manner of libmap.conf, and a deny list in the manner of cryptoadm
// disable. Explain says which provider serves an algorithm and why.
// Primitives that fail to build fall through to the next candidate unless
// the policy is Strict; signers never do, because a key that lives in a
// token must not silently become a different key.
//
// # Calibration
//
// A Calibrator times each candidate for about DefaultBudget at 1 KiB and
// 32 KiB (the sizes of SSH packets) and caches the result as JSON under
// the user's cache directory, keyed by CPU model, Go version and provider
// identity. Corrupt or foreign cache files are ignored with a warning.
//
// Each algorithm is resolved once into a plan (the eligible providers in
// fail-open order, the reason, what to record about each), rebuilt when a
// provider is registered or changes (ChangeNotifier), the policy changes,
// or a measurement arrives; a key exchange does not walk the policy again.
//
// # Policy checks
//
// New, Register and SetPolicy check the policy against the providers
// registered at the time. A pin or deny entry naming an unknown
// algorithm, a pin that a deny entry takes away, and a pin whose
// providers cannot serve its algorithm are errors naming the entry. A pin
// or deny entry naming a provider that is not registered is an error for
// SetPolicy and a warning for New and Register (the provider may come
// later); so is a pin a provider cannot serve yet (PendingReporter).
// Warnings are logged and shown by Explain. Deny entries take provider
// specs such as "pkcs11:token=web" (ParseDeny). A URI in a pin or deny
// entry carries no PIN (pin-value, pin-source: policies are printed) and
// no bad percent-encoding; its scheme's own syntax (an unknown pkcs11:
// attribute would match no token) is checked by the registered providers
// that implement SpecChecker. The registry imports no provider package.
//
// # Provenance and metrics
//
// Every primitive the registry hands out says where it is served
// (ProvenanceOf): the provider, its kind, the token and slot for PKCS #11,
// and whether it is a fallback — built by a later provider because the
// first failed, or moved off its device mid-life. With a Metrics sink the
// registry counts seals, opens and stream bytes, and times signatures,
// verifications, key agreements and KEMs; Metrics.Pools reports session
// pools. Package provider/prommetrics exports both to Prometheus.
//
// # Errors
//
// Errors start with "provider: " (a provider's own with its name) and
// match sentinels with errors.Is: ErrClosed after Close, ErrNotFound for a
// key or token that does not exist, ErrUnavailable for one that exists or
// is configured but cannot be reached, ErrNoProvider, ErrVerify, and
// ErrAuthentication for an AEAD message that does not authenticate.
// cipher.AEAD's Seal cannot fail; AEADs on devices also implement
// FallibleAEAD, whose SealErr reports a fault (use Seal and Open).
//
// # Several calls at once
//
// An AEAD on a device with several sessions or units serves several calls
// at once and says how many with ConcurrentAEAD's Lanes (Lanes reports 1
// for any other AEAD); a caller with independent messages, such as the
// SSH transport's GCM packets, keeps that many in flight. FanOut builds
// one from several underlying AEADs of the same key, adding a lane only
// when every lane it has is busy.
//
// # Contexts
//
// Operations that can wait on a device take a context: Signer,
// KeyAgreementContext, SignContext. crypto.Signer.Sign and the
// cipher.AEAD methods have none: providers bound them by their own
// deadline (pkcs11.Config.Deadline).
//
// # Releasing primitives and shutting down
//
// Primitives from hardware providers can hold a device session. Pass
// anything the registry returned to Release when done with it.
//
// Shut down in this order: stop taking new work (close listeners), let
// the work in progress end or cut it off (each connection releases its
// primitives), then call Registry.Close. Close closes the providers, the
// last registered first; a hardware provider waits, bounded, for calls in
// flight, then refuses new ones. Afterwards the registry and the
// providers return errors wrapping ErrClosed, and nothing reaches a
// device: a signer, AEAD or key agreement of a closed PKCS #11 provider
// returns ErrClosed (an AEAD's Seal, which cannot, finishes in Go unless
// its fallback is off). Primitives of the software and cpu providers hold
// nothing and keep working.
package provider
