package connection

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"
)

// Defaults used for zero Config fields. The window is OpenSSH's 2 MiB:
// measured with the OpenSSH client (test/bench, docs/benchmarks.md), an
// 8 MiB window made uploads 4-5x slower, because the client then keeps
// that much queued and spends half its time compacting its buffers.
const (
	DefaultWindowSize  = 2 << 20  // bytes granted to the peer per channel (see below)
	DefaultMaxPacket   = 64 << 10 // largest data payload we accept per packet
	DefaultMaxSessions = 10       // as OpenSSH's MaxSessions
	DefaultMaxChannels = 64       // all channel kinds together
	maxWindowSize      = 1<<31 - 1
	minMaxPacket       = 1024
	// maxMaxPacket keeps a full data message (13 bytes of header) inside
	// the transport's largest payload, 256 KiB less packet framing.
	maxMaxPacket = 256<<10 - 128
	// sendChunk caps the data we put in one outgoing packet.
	sendChunk = 64 << 10
)

// TCPForwarding mirrors sshd_config's AllowTcpForwarding. The zero value
// is "yes".
type TCPForwarding int

// AllowTcpForwarding values.
const (
	ForwardAll    TCPForwarding = iota // "yes" / "all"
	ForwardNone                        // "no"
	ForwardLocal                       // "local": direct-tcpip only
	ForwardRemote                      // "remote": tcpip-forward only
)

// ParseTCPForwarding parses an AllowTcpForwarding value.
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
	return 0, fmt.Errorf("connection: bad AllowTcpForwarding value %q (want yes, no, local, remote or all)", s)
}

// localAllowed reports whether direct-tcpip is permitted.
func (f TCPForwarding) localAllowed() bool { return f == ForwardAll || f == ForwardLocal }

// InternalSFTP names the in-process SFTP server in Config.Subsystems.
const InternalSFTP = "internal-sftp"

// Config configures the connection layer. The zero value is usable; it
// may be shared by many connections and must not be modified while in use.
type Config struct {
	// WindowSize is the receive window granted per channel (default 8 MiB,
	// at least MaxPacket, at most 2^31-1).
	WindowSize uint32
	// PaceSends keeps the channel data in flight near what the path to the
	// peer needs, judged from the delay of its window adjustments, instead
	// of filling the peer's window (see pacing.go). It is for peers that
	// return window early, as OpenSSH's client does (after 96 KiB); offload
	// sshd sets it for OpenSSH clients.
	PaceSends bool
	// MaxPacket is the largest channel data payload we accept (default
	// 64 KiB, between 1024 and 256 KiB). The transport must accept packets
	// this big plus 13 bytes of header.
	MaxPacket uint32
	// MaxSessions bounds open session channels per connection (default
	// 10); negative means no sessions at all.
	MaxSessions int
	// MaxChannels bounds all open channels per connection (default 64).
	MaxChannels int
	// AcceptEnv lists patterns (* and ?) of variable names a client may
	// set with "env". Empty accepts none.
	AcceptEnv []string
	// AllowTCPForwarding as in sshd_config; zero value is "yes".
	AllowTCPForwarding TCPForwarding
	// Subsystems maps subsystem names to commands run with the user's
	// shell, or to InternalSFTP. Nil means {"sftp": "internal-sftp"}.
	Subsystems map[string]string
	// SFTPHelper is the argv of the child that serves internal-sftp when
	// privileges must change (server is root, user is not). Default:
	// this executable, re-executed with OFFLOAD_INTERNAL_SFTP=1 in its
	// environment, which makes this package's init serve SFTP on stdin
	// and stdout before main runs (no command-line support needed). A
	// command given here must serve SFTP on its stdio (SFTPServerMain, or
	// a system sftp-server).
	SFTPHelper []string
	// ClientAliveInterval, when positive, sends keepalive@openssh.com
	// after that long without traffic from the peer and disconnects after
	// ClientAliveCountMax (default 3) unanswered probes.
	ClientAliveInterval time.Duration
	ClientAliveCountMax int
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// settings is a Config with defaults applied.
type settings struct {
	Config
	window, maxPacket uint32
	selfHelper        bool // SFTPHelper re-executes this program
}

func (c *Config) settings() *settings {
	s := &settings{}
	if c != nil {
		s.Config = *c
	}
	s.maxPacket = clampU32(s.MaxPacket, DefaultMaxPacket, minMaxPacket, maxMaxPacket)
	s.window = clampU32(s.WindowSize, DefaultWindowSize, s.maxPacket, maxWindowSize)
	s.MaxSessions = defaultInt(s.MaxSessions, DefaultMaxSessions)
	s.MaxChannels = defaultInt(s.MaxChannels, DefaultMaxChannels)
	s.ClientAliveCountMax = defaultInt(s.ClientAliveCountMax, 3)
	if s.Subsystems == nil {
		s.Subsystems = map[string]string{"sftp": InternalSFTP}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if len(s.SFTPHelper) == 0 {
		if exe, err := os.Executable(); err == nil {
			s.SFTPHelper = []string{exe, "sftp-server"}
			s.selfHelper = true
		}
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
		return "UNKNOWN", "0"
	}
	h, p, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String(), "0"
	}
	return h, p
}
