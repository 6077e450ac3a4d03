package testenv

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestReservePortSkipsLockedAndBound: a port another holder has locked,
// and one something listens on, are passed over; the next is taken and
// locked against the next holder.
func TestReservePortSkipsLockedAndBound(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	bound := l.Addr().(*net.TCPAddr).Port
	lo, hi := bound-1, bound+2 // lo locked, bound listened on, bound+1 free
	held, err := lockPort(dir, lo)
	if err != nil || held == nil {
		t.Fatalf("lock of a fresh port: %v %v", held, err)
	}
	defer held.Close()
	p, lock, err := reservePort(dir, lo, hi, 0)
	if err != nil {
		t.Skipf("port %d is in use here: %v", bound+1, err) // another process has it: nothing to learn
	}
	defer lock.Close()
	if p != bound+1 {
		t.Fatalf("reserved %d of %d (locked), %d (bound), %d", p, lo, bound, bound+1)
	}
	if again, err := lockPort(dir, p); err != nil || again != nil {
		t.Fatalf("port %d locked twice: %v %v", p, again, err)
	}
	if _, _, err := reservePort(dir, lo, hi, 0); err == nil {
		t.Fatal("a range with every port locked or bound gave a port")
	}
}

// TestFreePortIsQuiet: FreePort's ports lie below the ephemeral range,
// where no bind to port 0 lands, and bind.
func TestFreePortIsQuiet(t *testing.T) {
	lo, hi := quietPorts()
	for range 20 {
		p, _ := strconv.Atoi(FreePort(t))
		if p < lo || p >= hi {
			t.Fatalf("port %d outside [%d, %d)", p, lo, hi)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		l.Close()
	}
}

// TestLockPortFollowsNoLink: a lock file planted as a symbolic link in the
// shared directory is refused, and its target is not created.
func TestLockPortFollowsNoLink(t *testing.T) {
	dir, elsewhere := t.TempDir(), filepath.Join(t.TempDir(), "target")
	if err := os.Symlink(elsewhere, filepath.Join(dir, "12345")); err != nil {
		t.Fatal(err)
	}
	if f, err := lockPort(dir, 12345); err == nil {
		f.Close()
		t.Fatal("a link was followed")
	}
	if _, err := os.Lstat(elsewhere); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the link's target: %v", err)
	}
}
