// Package tokenfaults tests the SSH server while its PKCS #11 token fails
// under load (issue 7, item 3): a real SoftHSM token is deleted under a
// running server and restored, while sessions transfer through `cat`.
//
// The cases are:
//
//   - bulk AES-GCM pinned to the token: established sessions finish with
//     correct checksums or end with an error (never wrong data, never a
//     hang), new handshakes fall open to the CPU/software providers, and
//     the token serves again once restored;
//   - a host key in the token without failover: new handshakes fail
//     closed, established sessions keep going, and handshakes succeed
//     again without a restart once an administrator restores the token;
//   - a host key with a failover token: handshakes keep succeeding with
//     the same host key while the first token is gone.
//
// Each case logs a one-line summary of what happened. Without SoftHSM
// the tests skip (fail under OFFLOAD_REQUIRE_TOOLS=1).
package tokenfaults
