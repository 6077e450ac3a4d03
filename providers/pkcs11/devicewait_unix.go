//go:build linux || darwin

package pkcs11

import (
	"syscall"
	"time"
)

// deviceWait spends an injected delay the way a module call to a slow
// device does: the calling thread blocks in the kernel (nanosleep), to
// within tens of microseconds. time.Sleep would round a short delay up
// to about a millisecond on an idle Go runtime (its timers wake from an
// epoll wait of whole milliseconds), so a 0.2 ms delay would cost 1 ms.
func deviceWait(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
