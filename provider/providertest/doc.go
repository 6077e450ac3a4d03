// Package providertest is the conformance suite every offload provider
// must pass, in the manner of crypto/internal/cryptotest: the software and
// CPU providers run it from their tests, and so does the PKCS #11 provider
// against a SoftHSM token.
//
// # Entry points
//
// TestProvider walks the provider's capabilities and runs, for each listed
// algorithm, the sub-suite of its family. The per-family functions
// (TestAEAD, TestStream, TestKeyStream, TestBlock, TestMAC, TestOneTimeMAC, TestHash,
// TestSigner, TestKeyGenerator, TestKeyAgreement, TestKEM) are exported for
// tests that hold a primitive or a key the suite cannot make on its own, such
// as a signer opened from a token.
//
// A provider's test calls it once:
//
//	func TestConformance(t *testing.T) {
//		providertest.TestProvider(t, software.New())
//	}
//
// # What is checked
//
//   - Sizes against the catalog (provider.Lookup): keys, nonces, tags, public
//     keys, shared secrets, KEM ciphertexts.
//   - Known-answer vectors from the standards (vectors.go): the GCM
//     specification test cases, RFC 8439 (ChaCha20, Poly1305 and the AEAD),
//     RFC 4231 and RFC 2202 (HMAC), RFC 4418 (UMAC-64), FIPS 180 examples
//     (SHA-2), NIST SP 800-38A (CTR), FIPS-197 and SP 800-67 (AES and 3DES
//     blocks),
//     RFC 7748 (X25519, for the reference the cross-checks rely on).
//   - Agreement with a reference implementation from the standard library or
//     golang.org/x/crypto on random inputs, for every length from 0 to 300
//     bytes and a few large ones.
//   - The crypto/cipher and hash.Hash contracts: Seal and Open append to dst
//     and leave its existing bytes alone, exact overlap (in-place use) works,
//     inexact overlap and short buffers panic as the standard library does,
//     inputs are never modified, a failed Open leaves no plaintext behind,
//     Sum does not change the hash state.
//   - Authentication: changing any byte of the ciphertext or tag, the
//     additional data or the nonce makes Open fail; a one-time MAC rejects
//     every changed or truncated tag.
//   - Signatures verified with the standard library verifiers, and not
//     verifying for another message.
//   - Key agreement and KEMs: both sides agree, agree with the standard
//     library, and reject malformed, off-curve and low-order peers.
//   - Bad input: wrong key sizes give a *provider.KeySizeError, algorithms
//     of another family an error, and neither panics.
//
// # Releasing primitives
//
// The suite passes every primitive it makes (AEADs, streams, hashes, key
// agreements, generated signers, ...) to provider.Release as soon as it is
// done with it, and holds at most two at a time, so providers whose
// primitives hold device sessions from small pools can run it. Signers
// handed to TestSigner belong to the caller.
//
// # Randomness
//
// Inputs come from a seeded generator. The seed is logged; set
// OFFLOAD_PROVIDERTEST_SEED to replay a failure.
package providertest
