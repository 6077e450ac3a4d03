// Package rawclient is a deliberately small SSH client transport for
// hostile-client tests: it speaks just enough of the protocol to reach
// any point of a conversation (version exchange, key exchange, user
// authentication, channels) and then lets a test send whatever bytes it
// likes — wrong messages, broken lengths, bad MACs, floods.
//
// # What it implements
//
//   - version exchange, with a caller-chosen identification line;
//   - curve25519-sha256 key exchange, with or without the strict-kex
//     marker kex-strict-c-v00@openssh.com; the host-key signature over
//     the exchange hash is verified with x/crypto/ssh;
//   - the packet ciphers aes128-gcm@openssh.com, chacha20-poly1305@openssh.com
//     and aes128-ctr with hmac-sha2-256-etm@openssh.com or the
//     encrypt-and-MAC hmac-sha2-256;
//   - publickey user authentication with an ssh.Signer;
//   - session channels (open, exec, data, window adjust).
//
// # What it is not
//
// It is not a general SSH client: it checks little, negotiates nothing
// but what the test asks for, and never hides a protocol error. Every
// method returns errors instead of retrying, so a test can assert on the
// exact way the server ends a conversation (see ReadDisconnect).
package rawclient
