package auth

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// FileError is an authorized_keys, principals or CA file that was not
// used: unsafe permissions, too large, not a regular file or unreadable.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("auth: file %s: %v", e.Path, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

var (
	errTooLarge   = errors.New("too large")
	errNotRegular = errors.New("not a regular file")
	errBadOwner   = errors.New("bad ownership or modes") // StrictModes
)

// expandTokens replaces %h, %u, %U and %% in pattern.
func expandTokens(pattern, home, name, uid string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '%' {
			b.WriteByte(pattern[i])
			continue
		}
		if i+1 == len(pattern) {
			return "", fmt.Errorf("pattern %s ends in %%", quote(pattern))
		}
		i++
		switch pattern[i] {
		case 'h':
			b.WriteString(home)
		case 'u':
			b.WriteString(name)
		case 'U':
			b.WriteString(uid)
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("pattern %s: unknown token %%%c", quote(pattern), pattern[i])
		}
	}
	return b.String(), nil
}

// userPath expands pattern for u; relative results are taken relative
// to the home directory.
func userPath(pattern string, u *user.User) (string, error) {
	p, err := expandTokens(pattern, u.HomeDir, u.Username, u.Uid)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(u.HomeDir, p)
	}
	return filepath.Clean(p), nil
}

// readUserFile reads a file the user controls, bounded to MaxFileSize. A
// missing file is not an error: it returns nil, nil. With strict, the file
// and every directory from it up to the home directory (or /) must be
// owned by the user or root and not writable by group or others.
func readUserFile(path string, t *target, strict bool) ([]byte, error) {
	u := t.u
	f, err := openUserFile(path, t)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &FileError{path, err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &FileError{path, err}
	}
	if err := checkFile(fi, u, strict); err != nil {
		return nil, &FileError{path, err}
	}
	if strict {
		if err := checkDirs(path, u); err != nil {
			return nil, err
		}
	}
	return readBounded(path, f)
}

// readFile reads an administrator's file (the CA keys), bounded.
func readFile(path string) ([]byte, error) { return readFileMax(path, MaxFileSize) }

// readFileMax reads an administrator's file of at most max bytes.
func readFileMax(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &FileError{path, err}
	}
	defer f.Close()
	return readAtMost(path, f, max)
}

func readBounded(path string, r io.Reader) ([]byte, error) { return readAtMost(path, r, MaxFileSize) }

func readAtMost(path string, r io.Reader, max int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, &FileError{path, err}
	}
	if len(b) > max {
		return nil, &FileError{path, fmt.Errorf("%w: more than %d bytes", errTooLarge, max)}
	}
	return b, nil
}

func checkFile(fi fs.FileInfo, u *user.User, strict bool) error {
	if !fi.Mode().IsRegular() {
		return errNotRegular
	}
	if strict {
		return checkOwner(fi, u)
	}
	return nil
}

// checkDirs applies the StrictModes checks to the directories above path,
// after resolving symbolic links, up to the home directory or /.
func checkDirs(path string, u *user.User) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return &FileError{path, err}
	}
	home, err := filepath.EvalSymlinks(u.HomeDir)
	if err != nil {
		home = filepath.Clean(u.HomeDir)
	}
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			return &FileError{dir, err}
		}
		if err := checkOwner(fi, u); err != nil {
			return &FileError{dir, err}
		}
		if dir == home || dir == filepath.Dir(dir) {
			return nil
		}
	}
}

// checkOwner: owned by root or the user, not writable by group or others.
func checkOwner(fi fs.FileInfo, u *user.User) error {
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: mode %v is writable by group or others", errBadOwner, fi.Mode().Perm())
	}
	uid, ok := fileOwner(fi)
	if !ok {
		return nil
	}
	if s := fmt.Sprint(uid); s != "0" && s != u.Uid {
		return fmt.Errorf("%w: owned by uid %s, not %s or root", errBadOwner, s, u.Uid)
	}
	return nil
}
