//go:build unix

package fileperm

import (
	"io/fs"
	"syscall"
)

// owner is the uid that owns the file st describes.
func owner(st fs.FileInfo) (int, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(s.Uid), true
}
