// Package inproc serves SSH connections in the calling process: the
// in-process mode of package sshd, in which one goroutine per connection
// runs the key exchange (sshd/transport), the user authentication
// (sshd/auth, deciding with a sshd/login Login) and then the connection
// protocol (sshd/connection).
//
// # Role
//
// It is the process role of a server without privilege separation, as
// sshd/monitor, sshd/preauth and sshd/postauth are the roles of a
// separated one. Like them it constructs and does not decide: the
// transport server (built from the server's plan), the logins' settings
// and the limits come from an Env that package sshd builds once.
//
// # Limits and penalties
//
// A connection holds a per-source slot (Env.Penalties) and a MaxStartups
// slot (Env.Startup) until it authenticates. LoginGraceTime bounds the
// key exchange and the authentication: the socket's deadline, and a
// timer that closes the socket when an authentication step blocks
// without reading, as OpenSSH's alarm ends its per-connection process.
// How a connection that did not log in ended names its source's penalty,
// in the order OpenSSH's listener applies them; a panic while serving one
// connection is recovered, logged and penalised as a crash, and ends that
// connection only.
//
// # Login records
//
// FileRecorder writes pty sessions' utmp, wtmp and lastlog records from
// this process; a separated server's monitor writes them instead.
package inproc
