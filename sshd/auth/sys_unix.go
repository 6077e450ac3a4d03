//go:build unix

package auth

import (
	"io/fs"
	"os"
	"syscall"
)

// fileOwner returns the uid owning fi.
func fileOwner(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

// openNoBlock opens path for reading without blocking on a FIFO a user
// may have put in place of a file; the caller checks it is regular.
func openNoBlock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
