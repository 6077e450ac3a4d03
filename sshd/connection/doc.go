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
// BenchmarkChannelOutbound). With Config.WindowMax above the window (as
// ForClient sets it), a channel's window doubles while the peer is held
// by it — half a window consumed per round trip, the round trip timed
// with a keepalive when the connection starts — up to WindowMax
// (autowindow.go). A program that falls behind gets a 1 MiB stdin pipe,
// and one that fills its output pipe a 1 MiB pipe and 256 KiB reads.
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
// (terminal modes applied, absurd sizes refused; PermitTTY, no-pty),
// window-change, signal, exec, shell, subsystem, x11-req and
// auth-agent-req@openssh.com. Commands run as "shell -c command" with the
// user's login shell, with the session umask (Config.Umask, else UMASK
// from /etc/login.defs). A forced command (Config.ForceCommand, then the
// key's command=) replaces the request and SSH_ORIGINAL_COMMAND carries
// the original; a forced internal-sftp serves subsystem requests and
// answers anything else "This service allows sftp connections only.", as
// OpenSSH. The environment is built in OpenSSH's order (exec.go), with
// ~/.ssh/environment under PermitUserEnvironment and SetEnv last. Before
// the program, ~/.ssh/rc or /etc/ssh/sshrc runs, or xauth installs a
// forwarded X11 cookie (rc.go). An interactive login on a pty prints the
// last login (from Config.Sessions, the login-record writer) and
// /etc/motd unless ~/.hushlogin exists. When the process ends the layer
// drains stdout and stderr, then sends exit-status (or exit-signal), EOF
// and CLOSE, in that order.
//
// # Accounts
//
// When the server runs as root each child runs as the authenticated user:
// uid, gid, supplementary groups, home directory as cwd, login shell from
// /etc/passwd (bounded parser, getent as fallback). As another user the
// server can only serve its own account and refuses sessions for others.
// In the daemon the whole layer runs in the user's own post-auth process;
// the root case is the library's in-process mode.
//
// # SFTP
//
// "internal-sftp" (with its flags: -R, -p, -P, -d, -u, -l, -f) is served
// by package sftp. In process when the layer runs as the user; otherwise
// (root serving another user) by Config.SFTPHelper started as the user,
// as offload's "sftp-server" subcommand: a Go process cannot switch
// identity for one goroutine. ChrootDirectory confines it in either case.
//
// # Forwarding
//
// direct-tcpip and direct-streamlocal@openssh.com channels (PermitOpen
// and permitopen= both apply to both, as in OpenSSH: a socket path only
// through a "*" port entry, and a stream-local open also needs local TCP
// forwarding allowed); tcpip-forward (GatewayPorts,
// PermitListen and permitlisten=, privileged ports refused to users other
// than root, port 0 answered with the allocated port) and
// streamlocal-forward@openssh.com (StreamLocalBindMask,
// StreamLocalBindUnlink) listeners, at most Config.MaxListeners, opened by
// the process running the layer so they belong to the user;
// forwarded-tcpip, forwarded-streamlocal@openssh.com, x11 and
// auth-agent@openssh.com channels opened to the client (open.go). Unix
// sockets are refused when the layer does not run as the user.
// DisableForwarding turns every kind off.
//
// # Timeouts
//
// ChannelTimeout closes channels idle for their type's interval ("global"
// for all together) and UnusedConnectionTimeout a connection without
// channels; activity is counted per data message, without clock reads on
// the data path (timeout.go).
//
// # Robustness
//
// Every goroutine that handles peer input runs under recover (goSafe): a
// panic closes its channel, or ends its connection when it happens in the
// read loop, and is logged; the process keeps serving. A data message
// bigger than the maximum packet we announced is dropped and logged, as
// OpenSSH does.
package connection
