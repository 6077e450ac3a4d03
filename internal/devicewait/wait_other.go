//go:build !linux

// Package devicewait blocks the calling thread for a delay the way a call
// into a slow device does, for injected latencies.
package devicewait

import "time"

// Wait sleeps for d (without nanosleep here, time.Sleep's rounding applies).
func Wait(d time.Duration) { time.Sleep(d) }
