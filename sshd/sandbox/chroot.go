package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrChrootUnsafe is wrapped by CheckChroot's errors.
var ErrChrootUnsafe = errors.New("sandbox: unsafe chroot directory")

// CheckChroot applies OpenSSH's rules for a ChrootDirectory: an absolute
// path whose every component, from / down, is a directory owned by root
// and writable by nobody else. A user who could write to one could plant
// a setuid program or a libc of their choosing inside.
func CheckChroot(path string) error {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return fmt.Errorf("%w: %q is not a clean absolute path", ErrChrootUnsafe, path)
	}
	comp := "/"
	for _, part := range append([]string{""}, strings.Split(strings.TrimPrefix(path, "/"), "/")...) {
		comp = filepath.Join(comp, part)
		if err := checkChrootComponent(comp); err != nil {
			return err
		}
	}
	return nil
}

func checkChrootComponent(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrChrootUnsafe, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: %s: no ownership information", ErrChrootUnsafe, p)
	}
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrChrootUnsafe, p)
	case st.Uid != 0 || fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%w: bad ownership or modes for chroot directory component %q", ErrChrootUnsafe, p)
	}
	return nil
}

// Chroot confines the calling process to dir (CheckChroot must pass) and
// moves it to the new /.
func Chroot(dir string) error {
	if err := CheckChroot(dir); err != nil {
		return err
	}
	if err := syscall.Chroot(dir); err != nil {
		return fmt.Errorf("sandbox: chroot %s: %w", dir, err)
	}
	if err := os.Chdir("/"); err != nil {
		return fmt.Errorf("sandbox: chdir / after chroot: %w", err)
	}
	return nil
}
