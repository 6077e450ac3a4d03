// Package hostile holds the hostile-client suite: Go tests that talk raw
// TCP to an in-process offload SSH server on 127.0.0.1 and break the
// protocol on purpose.
//
// # Cases
//
// Version exchange (garbage, binary, endless and slow lines), packet
// framing before and after key exchange (length 0, huge, unaligned, bad
// padding), bad MACs under every cipher, wrong messages during key
// exchange, strict-kex violations, KEXINIT and rekey floods,
// authentication floods beyond MaxAuthTries, unknown channel ids,
// window overflow, data beyond the window and slowloris clients held
// off by LoginGraceTime.
//
// # What each case asserts
//
//   - the server ends the connection, with the SSH_MSG_DISCONNECT reason
//     code the RFCs ask for where it can send one;
//   - the heap stays bounded while the case runs;
//   - the goroutine count returns to what it was before the case;
//   - a healthy session on the same server (golang.org/x/crypto/ssh
//     running `cat` on a deterministic stream) keeps transferring
//     throughout, and its data is byte-for-byte intact at the end.
//
// The raw client is in test/hostile/rawclient, the server and the
// measurements in test/hostile/harness.
package hostile
