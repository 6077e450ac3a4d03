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
// KeyStreamProvider, MACProvider, OneTimeMACProvider, SignerProvider,
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
// # Releasing primitives
//
// Primitives from hardware providers can hold a device session. Pass
// anything the registry returned to Release when done with it.
package provider
