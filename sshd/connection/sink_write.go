//go:build !linux && !darwin

package connection

import "syscall"

// tryWrite writes what fits now of a then b; it never waits. Without
// writev(2) it takes two system calls.
func tryWrite(rc syscall.RawConn, a, b []byte) int {
	n := 0
	rc.Write(func(fd uintptr) bool {
		for _, p := range [2][]byte{a, b} {
			if len(p) == 0 {
				continue
			}
			k, err := syscall.Write(int(fd), p)
			if err != nil || k <= 0 {
				break
			}
			n += k
			if k < len(p) {
				break
			}
		}
		return true
	})
	return n
}
