// Package fileperm refuses secret files (private keys, PIN files) that
// others may read, by OpenSSH's rule: a file owned by the user the
// process runs as must have no group or other permission bits. A file
// owned by someone else is not checked, as in OpenSSH (an administrator
// may have reasons, such as a key owned by a service account).
package fileperm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrUnprotected is wrapped by the errors of Check.
var ErrUnprotected = errors.New("accessible by group or others")

// Error says which file is too open; What is "private key" or "PIN".
type Error struct {
	What string
	Path string
	Mode fs.FileMode
}

func (e *Error) Error() string {
	if e.What == "private key" {
		// The marker is OpenSSH's: admins and their scripts grep for it.
		return fmt.Sprintf("UNPROTECTED PRIVATE KEY FILE: %s has permissions %04o, so group or others may read it; "+
			"the key is not used until only its owner may (chmod 600 %s)", e.Path, e.Mode.Perm(), e.Path)
	}
	return fmt.Sprintf("%s file %s has permissions %04o, so group or others may read it; "+
		"it is not used until only its owner may (chmod 600 %s)", e.What, e.Path, e.Mode.Perm(), e.Path)
}

func (e *Error) Unwrap() error { return ErrUnprotected }

// Check refuses f, opened from path, when the process's real user owns
// it and its mode has any group or other bit. It looks at the open file,
// so what it checks is what is read.
func Check(f *os.File, path, what string) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	uid, ok := owner(st)
	if !ok || uid != os.Getuid() || st.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return &Error{What: what, Path: path, Mode: st.Mode()}
}
