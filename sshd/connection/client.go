package connection

import "strings"

// Channel windows, chosen per client when the configuration leaves the
// window at zero.
//
// A large window lets a client keep a fast or distant link full, and
// offload's receive path costs the same whatever the window. OpenSSH's
// client is the exception: it reads its input until the whole window is
// queued in one buffer, and compacting that buffer as packets leave costs
// it more CPU the larger the window. Measured on loopback with
// `ssh host 'cat >/dev/null'` and aes128-gcm (docs/benchmarks.md): an
// 8 MiB window ran at 0.22x OpenSSH sshd, OpenSSH's own 2 MiB at 1.24x.
const (
	// WideWindowSize is granted to clients other than OpenSSH's.
	WideWindowSize = 8 << 20
	// OpenSSHWindowSize is granted to OpenSSH clients, as OpenSSH's sshd
	// grants them.
	OpenSSHWindowSize = 2 << 20
	// AutoWindowMax is how far a window chosen per client may grow when
	// the round trip needs it (autowindow.go): 320 MB/s at 100 ms.
	AutoWindowMax = 32 << 20
)

// windowFor returns the window for a client that announced version v.
func windowFor(v string) uint32 {
	if strings.HasPrefix(v, "SSH-2.0-OpenSSH_") {
		return OpenSSHWindowSize
	}
	return WideWindowSize
}

// ForClient returns cfg with the window chosen for the client that
// announced version v (unless cfg sets one; a chosen window may grow to
// AutoWindowMax when the round trip needs it) and, for OpenSSH clients,
// send pacing (Config.PaceSends): their client slows down when its window
// is kept full. cfg is not modified.
func ForClient(cfg *Config, v string) *Config {
	if cfg == nil {
		cfg = &Config{}
	}
	openssh := strings.HasPrefix(v, "SSH-2.0-OpenSSH_")
	if cfg.WindowSize != 0 && (cfg.PaceSends || !openssh) {
		return cfg
	}
	c := *cfg
	if c.WindowSize == 0 {
		c.WindowSize = windowFor(v)
		c.WindowMax = max(c.WindowMax, AutoWindowMax)
	}
	c.PaceSends = c.PaceSends || openssh
	return &c
}
