//go:build linux || darwin

package connection

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// tryWrite writes what fits now of a then b, with one system call; it
// never waits.
func tryWrite(rc syscall.RawConn, a, b []byte) int {
	n := 0
	rc.Write(func(fd uintptr) bool {
		var k int
		var err error
		switch {
		case len(a) == 0:
			k, err = unix.Write(int(fd), b)
		case len(b) == 0:
			k, err = unix.Write(int(fd), a)
		default:
			k, err = unix.Writev(int(fd), [][]byte{a, b})
		}
		if err == nil && k > 0 {
			n = k
		}
		return true
	})
	return n
}
