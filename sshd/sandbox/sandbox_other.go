//go:build !linux

package sandbox

import "errors"

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
