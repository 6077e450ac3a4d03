//go:build linux

// Package devicewait blocks the calling thread for a delay the way a call
// into a slow device does, for injected latencies (the PKCS #11 fault
// injector, test providers).
package devicewait

import (
	"syscall"
	"time"
)

// Wait blocks the calling thread in the kernel (nanosleep) for d, to
// within tens of microseconds. time.Sleep would round a short delay up to
// about a millisecond on an idle Go runtime (its timers wake from an
// epoll wait of whole milliseconds), so a 0.2 ms delay would cost 1 ms.
func Wait(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
