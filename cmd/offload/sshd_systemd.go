package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/offload/offload/sshd/config"
)

// systemd's service protocols, written here as the few lines they are
// (sd_listen_fds(3), sd_notify(3)).

// listenFDsStart is the first descriptor systemd passes (SD_LISTEN_FDS_START).
const listenFDsStart = 3

// maxListenFDs bounds LISTEN_FDS, far beyond any unit's sockets.
const maxListenFDs = 1024

// activation is what systemd's socket activation passed: how many
// descriptors and their names (LISTEN_FDNAMES, "" where not given).
type activation struct {
	n     int
	names []string
}

// parseActivation reads LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES as
// sd_listen_fds does: the descriptors are for this process only when
// LISTEN_PID is its pid; none passed is not an error.
func parseActivation(getenv func(string) string, pid int) (activation, error) {
	fds := getenv("LISTEN_FDS")
	if fds == "" {
		return activation{}, nil
	}
	if p, err := strconv.Atoi(getenv("LISTEN_PID")); err != nil || p != pid {
		return activation{}, nil // meant for another process (a parent's)
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n < 0 || n > maxListenFDs {
		return activation{}, fmt.Errorf("systemd: bad LISTEN_FDS %q", fds)
	}
	a := activation{n: n, names: make([]string, n)}
	if names := getenv("LISTEN_FDNAMES"); names != "" {
		parts := strings.Split(names, ":")
		if len(parts) != n {
			return activation{}, fmt.Errorf("systemd: LISTEN_FDNAMES names %d descriptors, LISTEN_FDS %d", len(parts), n)
		}
		copy(a.names, parts)
	}
	return a, nil
}

// systemdListeners returns the listening sockets systemd passed by socket
// activation (a .socket unit, several ListenStream= lines), in order, or
// none when the process was not socket-activated. It unsets the
// variables, so that sessions do not inherit them, and marks the
// descriptors close-on-exec. A passed descriptor that is not a listening
// stream socket is an error naming it.
func systemdListeners() ([]net.Listener, error) {
	a, err := parseActivation(os.Getenv, os.Getpid())
	for _, v := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
		os.Unsetenv(v)
	}
	if err != nil || a.n == 0 {
		return nil, err
	}
	var ls []net.Listener
	for i := range a.n {
		fd := listenFDsStart + i
		unix.CloseOnExec(fd)
		l, err := fileListener(fd, a.names[i])
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return nil, err
		}
		ls = append(ls, l)
	}
	return ls, nil
}

func fileListener(fd int, name string) (net.Listener, error) {
	label := fmt.Sprintf("descriptor %d", fd)
	if name != "" {
		label += " (" + name + ")"
	}
	if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_STREAM {
		return nil, fmt.Errorf("systemd: %s is not a stream socket (use ListenStream=)", label)
	}
	if acc, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || acc == 0 {
		return nil, fmt.Errorf("systemd: %s is not listening (Accept=yes units run offload sshd -i instead)", label)
	}
	f := os.NewFile(uintptr(fd), label)
	defer f.Close() // FileListener dups it
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("systemd: %s: %w", label, err)
	}
	if tl, ok := l.(*net.TCPListener); ok {
		return plainKeepAliveListener{tl}, nil
	}
	return l, nil
}

// notifier tells systemd about the service's state (Type=notify): a
// datagram to $NOTIFY_SOCKET per state change. Without the variable it
// does nothing.
type notifier struct{ addr *net.UnixAddr }

// newNotifier reads and unsets $NOTIFY_SOCKET (sessions must not inherit
// it): a path, or an abstract socket written "@name".
func newNotifier() *notifier {
	s := os.Getenv("NOTIFY_SOCKET")
	os.Unsetenv("NOTIFY_SOCKET")
	if s == "" || (s[0] != '/' && s[0] != '@') {
		return &notifier{}
	}
	return &notifier{addr: &net.UnixAddr{Name: s, Net: "unixgram"}}
}

// send sends one state message ("READY=1"); errors are returned for the
// caller to log.
func (n *notifier) send(state string) error {
	if n == nil || n.addr == nil {
		return nil
	}
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(state)); err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("sd_notify: %w", err)
	}
	return nil
}

// Ready says the service is up (listening) or done reloading.
func (n *notifier) Ready(status string) error {
	return n.send("READY=1\nSTATUS=" + status)
}

// Reloading says a reload began, with the monotonic clock systemd
// compares to the time it sent SIGHUP (Type=notify-reload).
func (n *notifier) Reloading() error {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	usec := ts.Sec*1e6 + ts.Nsec/1e3
	return n.send("RELOADING=1\nMONOTONIC_USEC=" + strconv.FormatInt(usec, 10))
}

// Stopping says the service is shutting down.
func (n *notifier) Stopping() error { return n.send("STOPPING=1") }

// systemdKey is the listener key of a socket systemd passed.
const systemdKey = "systemd "

// startListeners returns the daemon's first listeners and their keys:
// the sockets systemd passed when socket-activated (they replace Port and
// ListenAddress, which the .socket unit's ListenStream= lines stand in
// for), else the configuration's.
func startListeners(c *config.Config, log *slog.Logger) ([]net.Listener, []string, error) {
	ls, err := systemdListeners()
	if err != nil {
		return nil, nil, err
	}
	if len(ls) == 0 {
		return openListeners(listenKeys(c), nil)
	}
	keys := make([]string, len(ls))
	for i, l := range ls {
		keys[i] = systemdKey + l.Addr().String()
	}
	log.Info("socket-activated: serving the sockets systemd passed instead of Port and ListenAddress", "sockets", len(ls))
	return ls, keys, nil
}

// wantedListeners is what a reloaded configuration listens on: the
// sockets systemd passed, when the daemon serves those, else its own.
func wantedListeners(c *config.Config, have []string) []string {
	var sd []string
	for _, k := range have {
		if strings.HasPrefix(k, systemdKey) {
			sd = append(sd, k)
		}
	}
	if len(sd) > 0 {
		return sd
	}
	return listenKeys(c)
}

// notifyErr logs a failed sd_notify; the service goes on.
func (d *daemon) notifyErr(err error) {
	if err != nil {
		d.log.Warn("systemd notification failed", "err", err)
	}
}
