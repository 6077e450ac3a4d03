// Package sshd is offload's SSH server: it accepts connections, runs the
// transport (sshd/transport), user authentication (sshd/auth) and the
// connection protocol (sshd/connection) over them, with every cipher, key
// exchange and host-key signature taken from a provider.Registry.
//
// # Configuration
//
// The zero Config is useful: a registry of the software and CPU
// providers, an ephemeral Ed25519 host key, the default algorithms (the
// client's order picks the cipher; CipherSelection measured steers it),
// a two-minute LoginGraceTime and at most DefaultMaxStartups
// unauthenticated connections at once.
//
// # Process model
//
// With Config.Separation nil the whole server runs in the calling
// process: the in-process mode, for Go programs that embed it. It
// protects nothing from a bug in the code that parses the client's bytes:
// that code runs with all of the process's privileges and sees its host
// keys; sessions run as the user only when the process is root (it
// switches identity for each child); forwarded sockets and channel
// buffers are the process's own. With UsePAM, as root, each
// connection's PAM session is held by a PAM keeper, this program
// started again, which starts the connection's programs; such a program
// must call RunChild first thing in main too, with its main goroutine
// locked to the main thread (runtime.LockOSThread in an init function).
// In a program that does not call RunChild, UsePAM runs PAM's auth and
// account stacks only, and each login says so in a warning.
//
// With Config.Separation set the server splits as OpenSSH 9.8 does, with
// fewer processes (package sshd/monitor): this process keeps the host
// keys, the configuration and the account decisions; unprivileged,
// sandboxed pre-auth workers (sshd/preauth, about one per CPU, each
// serving many connections) run the key exchange and the authentication
// conversation; and one post-auth process per user (sshd/postauth), as
// that user, serves that user's connections after the hand-over. The
// program must call RunChild first thing in main, since the children are
// this program started again. offload sshd runs this way unless
// PrivilegeSeparation no.
//
// # Connections
//
// Each connection gets an id that every log line about it carries, with
// the peer's address. A peer that breaks the protocol is sent the matching
// SSH_MSG_DISCONNECT and logged with the cause; a panic in the handling of
// one connection is recovered, logged and ends only that connection.
//
// # Shutdown
//
// Shutdown stops the listeners, waits for connections to end until its
// context is done, then disconnects the rest.
//
// A separated server can instead keep its sessions across a restart, as
// OpenSSH's are kept: Detach stops the listeners, the authentications in
// progress and the pre-auth workers, and returns the post-auth processes'
// sockets and state, which a process of the program's own (offload sshd
// starts itself again as a session keeper) passes to Keep; the keeper
// signs the sessions' key re-exchanges and writes their login records
// until the last one ends. In the in-process mode the sessions are this
// process's and end with it.
package sshd
