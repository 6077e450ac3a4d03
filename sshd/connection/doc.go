// Package connection is offload's SSH connection layer (RFC 4254): the
// channel multiplexer and the session, subsystem and forwarding handlers
// that run after user authentication.
//
// # Entry point
//
// The server glue calls Serve once authentication succeeded:
//
//	err := connection.Serve(ctx, pc, perms, cfg)
//
// Serve reads every non-transport packet from pc, answers global
// requests, opens and multiplexes channels, and returns when the peer
// disconnects, a protocol error occurs or ctx ends. Before returning it
// closes every channel, kills and reaps every child process and closes pc.
// Connection details for SSH_CONNECTION / SSH_CLIENT come from WithAddrs
// on ctx or, failing that, from RemoteAddr/LocalAddr methods on pc.
//
// # Protocol errors
//
// A peer that breaks the protocol (unknown channel id, data beyond the
// window, window overflow, double close, messages on a closed channel)
// gets SSH_MSG_DISCONNECT: Serve sends it itself when pc implements
// wire.Disconnector, and returns a *ProtocolError carrying the reason
// code. The glue must not send a second DISCONNECT.
//
// # Windows
//
// Each channel grants the peer Config.WindowSize bytes (default 8 MiB)
// and sends WINDOW_ADJUST as soon as half of it has been consumed, so a
// bulk sender never runs dry. Inbound data is buffered per channel in a
// ring that grows on demand up to the window, so idle channels cost
// little. The data path reuses per-channel buffers and does not allocate
// per packet.
//
// # Sessions
//
// Session channels accept env (AcceptEnv patterns, bounded), pty-req
// (terminal modes applied, absurd sizes refused), window-change, signal,
// exec, shell and subsystem. Commands run as "shell -c command" with the
// user's login shell; a forced command (perm.ForceCommand) replaces the
// request and SSH_ORIGINAL_COMMAND carries the original. When the process
// ends the layer drains stdout and stderr, then sends exit-status (or
// exit-signal), EOF and CLOSE, in that order.
//
// # Accounts
//
// When the server runs as root each child runs as the authenticated user:
// uid, gid, supplementary groups, home directory as cwd, login shell from
// /etc/passwd (bounded parser, getent as fallback). As another user the
// server can only serve its own account and refuses sessions for others.
//
// # SFTP
//
// The "internal-sftp" subsystem is served by github.com/pkg/sftp. When no
// privilege change is needed (server uid equals the user's uid) it runs in
// process over the channel. Otherwise it runs in a child process with the
// user's credentials: Config.SFTPHelper (default: this executable with
// the argument "sftp-server", which must call SFTPServerMain).
//
// # Forwarding
//
// direct-tcpip channels are allowed unless Config.AllowTCPForwarding
// forbids local forwarding or the login carries NoPortForwarding; when
// perm.PermitOpen is set the target must match one of its entries.
package connection
