//go:build !linux

package connection

import (
	"errors"
	"os"

	"github.com/creack/pty"
)

// applyModes is not implemented off Linux; the pty keeps its defaults.
func applyModes(tty *os.File, ms []termMode) error {
	if len(ms) == 0 {
		return nil
	}
	return errors.New("connection: terminal modes are only applied on Linux")
}

func lookupGroupID(name string) (int, error) { return 0, errors.New("connection: no group lookup") }

func setWinsize(f *os.File, ws *pty.Winsize) error { return pty.Setsize(f, ws) }

// pollable leaves the pty master as pty.Open made it off Linux.
func pollable(f *os.File) (*os.File, error) { return f, nil }
