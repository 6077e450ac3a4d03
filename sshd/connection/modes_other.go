//go:build !linux

package connection

import (
	"errors"
	"os"
)

// applyModes is not implemented off Linux; the pty keeps its defaults.
func applyModes(tty *os.File, ms []termMode) error {
	if len(ms) == 0 {
		return nil
	}
	return errors.New("connection: terminal modes are only applied on Linux")
}

func lookupGroupID(name string) (int, error) { return 0, errors.New("connection: no group lookup") }
