//go:build !linux && !darwin

package lanetest

import "time"

func wait(d time.Duration) { time.Sleep(d) }
