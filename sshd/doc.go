// Package sshd is offload's SSH server: it accepts connections, runs the
// transport (sshd/transport), user authentication (sshd/auth) and the
// connection protocol (sshd/connection) over them, with every cipher, key
// exchange and host-key signature taken from a provider.Registry.
//
// # Configuration
//
// The zero Config is useful: a registry of the software and CPU
// providers, an ephemeral Ed25519 host key, the default algorithms (the
// cipher order follows the registry's measurements), a two-minute
// LoginGraceTime and at most DefaultMaxStartups unauthenticated
// connections at once.
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
package sshd
