//go:build !linux

package sandbox

import (
	"errors"
	"os"
)

// ErrUnsupported is returned where the platform has no sandbox.
var ErrUnsupported = errors.New("sandbox: not supported on this platform (Linux only)")

// EnterPreauth reports that no measure is available here.
func EnterPreauth() (*Report, error) {
	return &Report{Missing: []string{"no_new_privs", "landlock", "seccomp", "non-dumpable"}}, nil
}

// EnterPostauth reports that no measure is available here.
func EnterPostauth() (*Report, error) {
	return &Report{Missing: []string{"non-dumpable"}}, nil
}

// CloseOnExec is not available here.
func CloseOnExec() error { return ErrUnsupported }

// Identity is an account's uid, gid and supplementary groups.
type Identity struct {
	Uid, Gid uint32
	Groups   []uint32
}

// OpenAs opens path as the calling process: other identities need Linux.
func OpenAs(id Identity, path string, flags int) (*os.File, error) {
	if os.Geteuid() != 0 {
		return os.OpenFile(path, flags, 0)
	}
	return nil, ErrUnsupported
}

// DropTo is not available here.
func DropTo(id Identity) error { return ErrUnsupported }

// SetName does nothing here.
func SetName(string) {}
