//go:build !linux && !darwin

package pkcs11

import "time"

// deviceWait spends an injected delay.
func deviceWait(d time.Duration) { time.Sleep(d) }
