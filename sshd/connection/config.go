package connection

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"strings"
	"time"
)

// Defaults used for zero Config fields. The largest packet we accept is
// OpenSSH's 32 KiB: the OpenSSH client (9.2) compares the packet it is
// about to send, in bytes, with its RekeyLimit in cipher blocks, so with
// 64 KiB packets, AES-GCM and `ssh -o RekeyLimit=1M` it re-keyed before
// every packet (121 key exchanges for an 8 MiB upload against 16 with
// OpenSSH's sshd; 16 with 32 KiB; TestRekeyLimit). Uploads were no slower
// (4 rounds of 512 MiB, aes128-gcm, load 0.6: 361-483 MiB/s with 64 KiB,
// 413-478 with 32 KiB). The window is OpenSSH's 2 MiB:
// measured with the OpenSSH client (test/bench, docs/benchmarks.md), an
// 8 MiB window made uploads 4-5x slower, because the client then keeps
// that much queued and spends half its time compacting its buffers.
const (
	DefaultWindowSize   = 2 << 20  // bytes granted to the peer per channel (see below)
	DefaultMaxPacket    = 32 << 10 // largest data payload we accept per packet: OpenSSH's (see below)
	DefaultMaxSessions  = 10       // as OpenSSH's MaxSessions
	DefaultMaxChannels  = 64       // all channel kinds together
	DefaultMaxListeners = 32       // tcpip-forward and streamlocal-forward listeners per connection
	// DefaultClientAliveCountMax is OpenSSH's ClientAliveCountMax.
	DefaultClientAliveCountMax = 3
	// DefaultStreamLocalBindMask is OpenSSH's StreamLocalBindMask.
	DefaultStreamLocalBindMask fs.FileMode = 0o177
	// X11 defaults, as OpenSSH's.
	DefaultX11DisplayOffset = 10
	DefaultX11MaxDisplays   = 1000
	DefaultXAuthLocation    = "/usr/bin/xauth" // Debian's, as sshd -T prints it
	maxWindowSize           = 1<<31 - 1
	minMaxPacket            = 1024
	// maxMaxPacket keeps a full data message (13 bytes of header) inside
	// the transport's largest payload, 256 KiB less packet framing.
	maxMaxPacket = 256<<10 - 128
	// sendChunk caps the data we put in one outgoing packet.
	sendChunk = 64 << 10
	// bulkChunk is how much a channel reads from its program at once
	// during a bulk transfer, bulkPipe the pipe size it then asks for
	// (fs.pipe-max-size is 1 MiB by default).
	bulkChunk = 256 << 10
	bulkPipe  = 1 << 20
)

// TCPForwarding mirrors sshd_config's AllowTcpForwarding and
// AllowStreamLocalForwarding. The zero value is "yes".
type TCPForwarding int

// AllowTcpForwarding and AllowStreamLocalForwarding values.
const (
	ForwardAll    TCPForwarding = iota // "yes" / "all"
	ForwardNone                        // "no"
	ForwardLocal                       // "local": direct-tcpip / direct-streamlocal only
	ForwardRemote                      // "remote": tcpip-forward / streamlocal-forward only
)

// ParseTCPForwarding parses an AllowTcpForwarding or
// AllowStreamLocalForwarding value.
func ParseTCPForwarding(s string) (TCPForwarding, error) {
	switch strings.ToLower(s) {
	case "yes", "all":
		return ForwardAll, nil
	case "no":
		return ForwardNone, nil
	case "local":
		return ForwardLocal, nil
	case "remote":
		return ForwardRemote, nil
	}
	return 0, fmt.Errorf("connection: bad forwarding value %q (want yes, no, local, remote or all)", s)
}

// localAllowed reports whether direct-* channels are permitted.
func (f TCPForwarding) localAllowed() bool { return f == ForwardAll || f == ForwardLocal }

// remoteAllowed reports whether *-forward listeners are permitted.
func (f TCPForwarding) remoteAllowed() bool { return f == ForwardAll || f == ForwardRemote }

// GatewayPorts mirrors sshd_config's GatewayPorts. The zero value is "no".
type GatewayPorts int

// GatewayPorts values.
const (
	GatewayNo              GatewayPorts = iota // listen on loopback only
	GatewayYes                                 // listen on every address
	GatewayClientSpecified                     // listen where the client asks
)

// ParseGatewayPorts parses a GatewayPorts value.
func ParseGatewayPorts(s string) (GatewayPorts, error) {
	switch strings.ToLower(s) {
	case "no":
		return GatewayNo, nil
	case "yes":
		return GatewayYes, nil
	case "clientspecified":
		return GatewayClientSpecified, nil
	}
	return 0, fmt.Errorf("connection: bad GatewayPorts value %q (want no, yes or clientspecified)", s)
}

// InternalSFTP names the in-process SFTP server in Config.Subsystems and
// ForceCommand.
const InternalSFTP = "internal-sftp"

// Config configures the connection layer. The zero value is usable; it
// may be shared by many connections and must not be modified while in use.
// Fields named after an sshd_config keyword behave as that keyword; the
// keywords whose default is "yes" appear negated (NoTTY for PermitTTY no),
// so that the zero value keeps OpenSSH's defaults.
type Config struct {
	// WindowSize is the receive window granted per channel (default 2 MiB,
	// at least MaxPacket, at most 2^31-1).
	WindowSize uint32
	// WindowMax, when larger than the window, lets a channel's window grow
	// (doubling, at most once per round trip) while the peer sends a whole
	// window per round trip, up to WindowMax (autowindow.go). ForClient sets
	// it to AutoWindowMax when it chooses the window.
	WindowMax uint32
	// PaceSends keeps the channel data in flight near what the path to the
	// peer needs, judged from the delay of its window adjustments, instead
	// of filling the peer's window (see pacing.go). It is for peers that
	// return window early, as OpenSSH's client does (after 96 KiB); offload
	// sshd sets it for OpenSSH clients.
	PaceSends bool
	// MaxPacket is the largest channel data payload we accept (default
	// 32 KiB, between 1024 and 256 KiB); a bigger data message is a
	// protocol error. The transport must accept packets this big plus 13
	// bytes of header.
	MaxPacket uint32
	// MaxSessions bounds open session channels per connection (default
	// 10); negative means no sessions at all.
	MaxSessions int
	// MaxChannels bounds all open channels per connection (default 64).
	MaxChannels int
	// AcceptEnv lists patterns (* and ?) of variable names a client may
	// set with "env". Empty accepts none.
	AcceptEnv []string
	// Subsystems maps subsystem names to commands run with the user's
	// shell, or to InternalSFTP with its flags ("internal-sftp -R"). Nil
	// means {"sftp": "internal-sftp"}.
	Subsystems map[string]string
	// SFTPHelper is the argv of a program that serves SFTP on its stdio
	// as the user (sftp.Main; offload's is "offload sftp-server"), run
	// when internal-sftp cannot be served in process because the
	// connection layer runs as another user (the library's in-process mode
	// as root). The internal-sftp flags follow, after "--root DIR" when
	// ChrootDirectory is set. Empty: such sessions are refused.
	SFTPHelper []string
	// ClientAliveInterval, when positive, sends keepalive@openssh.com
	// after that long without traffic from the peer and disconnects after
	// ClientAliveCountMax (0: DefaultClientAliveCountMax) unanswered probes;
	// a negative ClientAliveCountMax never disconnects (sshd_config's
	// ClientAliveCountMax 0: the probes are still sent).
	ClientAliveInterval time.Duration
	ClientAliveCountMax int
	// IPQoS, when set, marks the connection's packets (IP_TOS, or
	// IPV6_TCLASS on IPv6) when its first session starts, as OpenSSH's
	// IPQoS does: Interactive for a session with a pty or X11
	// forwarding, Bulk for any other. Nil leaves the socket alone.
	IPQoS *QoS `json:",omitempty"`

	// ForceCommand replaces the command of every session (and wins over
	// an authorized_keys command=); SSH_ORIGINAL_COMMAND carries the
	// client's. "internal-sftp [flags]" serves SFTP and refuses other
	// sessions.
	ForceCommand string
	// NoTTY refuses pty-req (PermitTTY no).
	NoTTY bool
	// SetEnv are NAME=value pairs set in every session, after the client's
	// and the user's own (SetEnv).
	SetEnv []string
	// PermitUserEnvironment lists patterns (with ! negation) of variable
	// names read from ~/.ssh/environment; nil or empty means "no", {"*"}
	// means "yes". The auth layer decides whether authorized_keys
	// environment= options pass at all (its PermitUserEnvironment); when
	// this list is not nil, those whose name it does not match are dropped
	// too, as OpenSSH's pattern-list form does.
	PermitUserEnvironment []string
	// NoUserRC skips ~/.ssh/rc (PermitUserRC no); /etc/ssh/sshrc still runs.
	NoUserRC bool
	// ExposeAuthInfo writes the login's perm.Permissions.AuthInfo to a
	// file of the user's (mode 0600, in the temporary directory, removed
	// when the connection ends) named by SSH_USER_AUTH in every session
	// (ExposeAuthInfo yes).
	ExposeAuthInfo bool `json:",omitempty"`
	// NoMotd does not print /etc/motd at interactive logins (PrintMotd no).
	NoMotd bool
	// NoLastLog does not print the last login (PrintLastLog no).
	NoLastLog bool
	// LoginMessages are printed first at interactive logins, under the
	// same ~/.hushlogin rule as the last login and the motd: the texts
	// PAM's session modules showed (pam_motd), as OpenSSH prints them.
	LoginMessages string `json:",omitempty"`
	// Nologin refuses the sessions of users other than root while
	// /etc/nologin exists, showing its text and ending them with status
	// 254, as OpenSSH does without PAM (with UsePAM, pam_nologin in the
	// account stack refuses the login itself).
	Nologin bool
	// Umask is the file-creation mask of session programs and
	// internal-sftp (unless -u); nil reads UMASK from /etc/login.defs
	// (022 when absent). A PAM module that sets one (pam_umask) should be
	// passed here by the glue.
	Umask *fs.FileMode
	// ChrootDirectory confines sessions when the connection layer itself
	// does not run chrooted (the library's in-process mode; the daemon
	// chroots the user's process instead): internal-sftp is confined to
	// it and session programs start chrooted there (needs root). The
	// ownership checks are the caller's.
	ChrootDirectory string
	// Account, when set and naming the logged-in user, is used instead of
	// looking the user up (see ResolveAccount).
	Account *Account `json:",omitempty"`
	// Sessions writes login records for pty sessions (utmp, wtmp,
	// lastlog); nil writes none. Not serialised: a process that receives
	// the settings sets its own.
	Sessions SessionRecorder `json:"-"`
	// OpenHeldPAMSession, when set, opens the session the connection's
	// programs run in (an in-process server's PAM session): called once
	// per connection, with the user's name, before its first session
	// program or subsystem starts; a failure refuses that request and the
	// later ones. The session is closed when the connection ends.
	OpenHeldPAMSession func(user string) (*HeldPAMSession, error) `json:"-"`
	// ChannelTimeouts close channels idle for their type's interval
	// (ChannelTimeout).
	ChannelTimeouts []ChannelTimeout
	// UnusedConnectionTimeout, when positive, closes the connection after
	// it had no open channel for that long (listeners do not count).
	UnusedConnectionTimeout time.Duration

	// AllowTCPForwarding as in sshd_config; zero value is "yes".
	AllowTCPForwarding TCPForwarding
	// AllowStreamLocalForwarding as in sshd_config; zero value is "yes".
	AllowStreamLocalForwarding TCPForwarding
	// DisableForwarding turns every kind of forwarding off: TCP, Unix
	// sockets, agent and X11.
	DisableForwarding bool
	// GatewayPorts decides where tcpip-forward listens.
	GatewayPorts GatewayPorts
	// PermitOpen limits direct-tcpip targets: "host:port" entries (port
	// "*" for any, host "*" for any), "any" or "none"; nil means any. As
	// in OpenSSH, it limits direct-streamlocal too: a socket path is
	// allowed only by an entry with port "*" and host "*" or the path
	// ("[/run/app.sock]:*"); the key's permitopen= alike.
	PermitOpen []string
	// PermitListen limits tcpip-forward: "[host:]port" entries (host a
	// pattern, port "*" for any), "any" or "none"; nil means any.
	PermitListen []string
	// StreamLocalBindMask masks the mode of forwarded Unix sockets; nil
	// means 0177 (owner only).
	StreamLocalBindMask *fs.FileMode
	// StreamLocalBindUnlink removes an existing socket file before
	// listening on its path.
	StreamLocalBindUnlink bool
	// MaxListeners bounds forwarding listeners per connection (default 32).
	MaxListeners int
	// NoAgentForwarding refuses auth-agent-req@openssh.com
	// (AllowAgentForwarding no).
	NoAgentForwarding bool
	// X11Forwarding allows x11-req.
	X11Forwarding bool
	// X11DisplayOffset is the first display number tried (nil: 10);
	// X11MaxDisplays how many (0: 1000).
	X11DisplayOffset *int
	X11MaxDisplays   int
	// X11NoLocalhost listens for X11 on every address and names the host
	// in DISPLAY (X11UseLocalhost no).
	X11NoLocalhost bool
	// XAuthLocation is the xauth program (default /usr/bin/xauth); "none"
	// means there is none, so x11-req is refused, as by OpenSSH.
	XAuthLocation string

	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// ChannelTimeout is one ChannelTimeout entry: channels whose type matches
// Type (a pattern with * and ?, or "global" for all channels taken
// together) are closed after Timeout without traffic. Types are
// "session", "direct-tcpip", "direct-streamlocal@openssh.com",
// "forwarded-tcpip", "forwarded-streamlocal@openssh.com",
// "x11-connection" and "agent-connection", as OpenSSH 10 names them. A
// zero Timeout disables the entry.
type ChannelTimeout struct {
	Type    string
	Timeout time.Duration
}

// settings is a Config with defaults applied.
type settings struct {
	Config
	window, maxPacket uint32
	windowMax         uint32
	umask             fs.FileMode
	bindMask          fs.FileMode
	x11Offset         int
}

func (c *Config) settings() *settings {
	s := &settings{}
	if c != nil {
		s.Config = *c
	}
	s.maxPacket = clampU32(s.MaxPacket, DefaultMaxPacket, minMaxPacket, maxMaxPacket)
	s.window = clampU32(s.WindowSize, DefaultWindowSize, s.maxPacket, maxWindowSize)
	s.windowMax = min(max(s.WindowMax, s.window), maxWindowSize)
	s.MaxSessions = defaultInt(s.MaxSessions, DefaultMaxSessions)
	s.MaxChannels = defaultInt(s.MaxChannels, DefaultMaxChannels)
	s.MaxListeners = defaultInt(s.MaxListeners, DefaultMaxListeners)
	s.ClientAliveCountMax = defaultInt(s.ClientAliveCountMax, DefaultClientAliveCountMax)
	s.X11MaxDisplays = defaultInt(s.X11MaxDisplays, DefaultX11MaxDisplays)
	s.x11Offset = DefaultX11DisplayOffset
	if s.X11DisplayOffset != nil {
		s.x11Offset = *s.X11DisplayOffset
	}
	if s.XAuthLocation == "" {
		s.XAuthLocation = DefaultXAuthLocation
	}
	s.bindMask = DefaultStreamLocalBindMask
	if s.StreamLocalBindMask != nil {
		s.bindMask = *s.StreamLocalBindMask & 0o777
	}
	if s.Umask != nil {
		s.umask = *s.Umask & 0o777
	} else {
		s.umask = loginDefsUmask(loginDefsPath)
	}
	if s.Subsystems == nil {
		s.Subsystems = map[string]string{"sftp": InternalSFTP}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.DisableForwarding {
		s.AllowTCPForwarding, s.AllowStreamLocalForwarding = ForwardNone, ForwardNone
		s.NoAgentForwarding, s.X11Forwarding = true, false
	}
	return s
}

func clampU32(v, def, lo, hi uint32) uint32 {
	if v == 0 {
		return def
	}
	return min(max(v, lo), hi)
}

func defaultInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Addrs carries the endpoints of the TCP connection, for SSH_CONNECTION
// and SSH_CLIENT.
type Addrs struct {
	Remote, Local net.Addr
}

type addrsKey struct{}

// WithAddrs returns a context carrying the connection's endpoints.
func WithAddrs(ctx context.Context, a Addrs) context.Context {
	return context.WithValue(ctx, addrsKey{}, a)
}

// addrsFrom finds the endpoints in ctx or on the PacketConn.
func addrsFrom(ctx context.Context, pc any) Addrs {
	if a, ok := ctx.Value(addrsKey{}).(Addrs); ok {
		return a
	}
	var a Addrs
	if r, ok := pc.(interface{ RemoteAddr() net.Addr }); ok {
		a.Remote = r.RemoteAddr()
	}
	if l, ok := pc.(interface{ LocalAddr() net.Addr }); ok {
		a.Local = l.LocalAddr()
	}
	return a
}

// hostPort splits an address into host and port strings, with fallbacks.
func hostPort(a net.Addr) (string, string) {
	if a == nil {
		return unknownHost, unknownPort
	}
	h, p, err := net.SplitHostPort(a.String())
	if err != nil {
		return unknownHost, unknownPort
	}
	return h, p
}

// The endpoint of a connection that is not on a socket (inetd mode over
// a pipe pair, as a ProxyCommand runs sshd -i), in SSH_CONNECTION and
// SSH_CLIENT: what OpenSSH's sshd sets there, which scripts compare with.
const (
	unknownHost = "UNKNOWN"
	unknownPort = "65535"
)

// QoS holds two type-of-service bytes (DSCP in the top six bits); a
// negative one leaves the socket's as it is.
type QoS struct {
	Interactive, Bulk int
}

// TOSSetter is what a PacketConn on an IP socket offers to mark its
// packets (transport.Conn does).
type TOSSetter interface {
	SetTOS(tos int) error
}
