//go:build linux || darwin

package lanetest

import (
	"syscall"
	"time"
)

// wait blocks the thread in nanosleep, as a device call does: time.Sleep
// rounds short delays up to about a millisecond on an idle Go runtime.
func wait(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
