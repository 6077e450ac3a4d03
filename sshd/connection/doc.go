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
// # Windows and packets
//
// Each channel grants the peer Config.WindowSize bytes (default 2 MiB)
// and sends WINDOW_ADJUST as soon as half of it has been consumed, so a
// bulk sender never runs dry; we accept data packets of Config.MaxPacket
// (default 64 KiB). Window arithmetic is done in 64 bits: an adjust past
// 2^32-1 or data beyond the window is a protocol error. Inbound data is
// buffered per channel in a ring that grows on demand up to the window,
// so idle channels cost little; while a session program's stdin pump is
// idle, the reader writes arriving data straight to the program's pipe
// instead, without blocking (what does not fit goes to the ring), which
// saves a goroutine switch and a copy per packet. Over a transport that
// is a wire.ReadWaiter, packets that arrived together are written with one
// writev of up to 64 KiB (sink.go). The data path reuses per-channel buffers
// and does not allocate per packet (see BenchmarkChannelInbound and
// BenchmarkChannelOutbound).
//
// Sends to a peer respect its window; with Config.PaceSends they also
// keep no more in flight than the path needs, judged from the delay of
// the peer's window adjustments (pacing.go).
//
// # Goroutines
//
// Serve's goroutine is the only reader of pc and never waits for a write:
// WritePacket may block during a key exchange that only the reader can
// finish. Replies the reader produces (global request answers, open
// failures, CLOSE answers) go through a bounded control queue with its
// own sender; each channel has its own handler goroutines, and a session
// answers its requests in order, starting a program's output only after
// the exec/shell/subsystem reply. With Config.ClientAliveInterval set, a
// silent peer is probed with keepalive@openssh.com and disconnected after
// ClientAliveCountMax unanswered probes.
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
// The "internal-sftp" subsystem is served by this package's own SFTP
// server (protocol version 3 with OpenSSH's extensions, including
// limits@openssh.com, which lets OpenSSH's sftp and scp ask for 255 KiB
// per READ and WRITE). It answers requests in order in one goroutine and
// reads files straight into the outgoing channel buffer; replies go out
// in full channel packets while more requests wait, and are flushed
// before it waits for input. When no privilege change is needed (server
// uid equals the user's uid) it runs in process over the channel. A Go
// process cannot switch identity for one goroutine, so otherwise it runs
// in a child process with the user's credentials: Config.SFTPHelper,
// by default this executable re-executed with OFFLOAD_INTERNAL_SFTP=1,
// which this package's init turns into an SFTP server on stdio.
//
// # Forwarding
//
// direct-tcpip channels are allowed unless Config.AllowTCPForwarding
// forbids local forwarding or the login carries NoPortForwarding; when
// perm.PermitOpen is set the target must match one of its entries.
package connection
