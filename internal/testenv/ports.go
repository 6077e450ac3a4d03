package testenv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// PortLockDir holds one lock file per port FreePort has handed out; every
// test binary on the machine shares it. The files stay when their locks
// go (one empty file per port, at most one per port of the range): a file
// removed while another process holds or is opening it would let two
// holders in.
const PortLockDir = "/tmp/offload-test-ports"

// FreePort returns a TCP port of 127.0.0.1 that is free and stays
// reserved for t until it ends. A port the kernel picked for a socket
// bound to port 0 is no reservation: another test binary's next bind(0)
// or outgoing connection may take it before the server binds it. So the
// port is chosen below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), where neither lands, and locked there
// (flock on PortLockDir/PORT) against the other test binaries; the lock
// goes with t's end or the process.
func FreePort(t testing.TB) string {
	t.Helper()
	lo, hi := quietPorts()
	p, lock, err := reservePort(PortLockDir, lo, hi, rand.IntN(hi-lo))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	return strconv.Itoa(p)
}

// quietPorts is the range [lo, hi) FreePort takes ports from: below the
// ephemeral range, from 10000 on.
func quietPorts() (lo, hi int) {
	lo, hi = 10000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > lo+1000 {
				hi = n
			}
		}
	}
	return lo, hi
}

// reservePort locks and returns the first port of [lo, hi), from lo+offset
// round, that no other holder has locked and that 127.0.0.1 can bind.
func reservePort(dir string, lo, hi, offset int) (int, *os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, nil, fmt.Errorf("testenv: port locks: %w", err)
	}
	os.Chmod(dir, 0o1777) // best effort: tests of other users share it
	for i := range hi - lo {
		p := lo + (offset+i)%(hi-lo)
		lock, err := lockPort(dir, p)
		if err != nil {
			return 0, nil, err
		}
		if lock == nil {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			l.Close()
			return p, lock, nil
		}
		lock.Close()
	}
	return 0, nil, fmt.Errorf("testenv: no free port in %d-%d", lo, hi-1)
}

// lockPort takes the lock of port p, or returns nil when another holder
// has it.
func lockPort(dir string, p int) (*os.File, error) {
	// No symbolic link is followed: the directory is shared by every user.
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testenv: port lock: %w", err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, nil
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("testenv: port lock: %w", err)
	}
	return f, nil
}
