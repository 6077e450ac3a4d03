package sftp

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"
)

// fsys is the file system the server works on. Names are absolute and
// clean ("/", "/a/b"), as the client sees them. hostFS is the host's;
// rootFS confines every name to a directory (Config.Root), following
// symbolic links as a chroot(2) would, never out of it.
type fsys interface {
	openFile(name string, flag int, perm fs.FileMode) (*os.File, error)
	lstat(name string) (fs.FileInfo, error)
	stat(name string) (fs.FileInfo, error)
	mkdir(name string, perm fs.FileMode) error
	chmod(name string, mode fs.FileMode) error
	chown(name string, uid, gid int) error
	lchown(name string, uid, gid int) error
	chtimes(name string, at, mt time.Time) error
	lchtimes(name string, at, mt time.Time) error
	truncate(name string, size int64) error
	remove(name string) error // a file, never a directory
	rmdir(name string) error
	rename(from, to string) error // replaces to
	link(from, to string) error
	symlink(target, link string) error
	readlink(name string) (string, error)
	statfs(name string) (fsStats, error)
	close() error
}

// maxLinks bounds symbolic links followed while resolving one name, as
// SYMLOOP_MAX.
const maxLinks = 32

var errLoop = &os.PathError{Op: "resolve", Err: syscall.ELOOP}

// linkWalker reads names whose directory holds no links, for realpath.
type linkWalker interface {
	rawLstat(name string) (fs.FileInfo, error)
	rawReadlink(name string) (string, error)
}

// realpath resolves name as OpenSSH's sftp_realpath: ".", ".." and
// symbolic links are removed; the last component may be missing.
func realpath(f linkWalker, name string) (string, error) {
	left := strings.TrimPrefix(name, "/")
	resolved := "/"
	for links := 0; left != ""; {
		var next string
		next, left, _ = strings.Cut(left, "/")
		switch next {
		case "", ".":
			continue
		case "..":
			resolved = path.Dir(resolved)
			continue
		}
		cand := path.Join(resolved, next)
		fi, err := f.rawLstat(cand)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && left == "" {
				return cand, nil
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = cand
			continue
		}
		if links++; links > maxLinks {
			return "", errLoop
		}
		target, err := f.rawReadlink(cand)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			resolved = "/"
		}
		if left != "" {
			target = strings.TrimSuffix(target, "/") + "/" + left
		}
		left = target
	}
	return resolved, nil
}

// hostFS is the host's file system: names are host paths.
type hostFS struct{}

func (hostFS) openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (hostFS) lstat(name string) (fs.FileInfo, error)       { return os.Lstat(name) }
func (hostFS) stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }
func (hostFS) mkdir(name string, perm fs.FileMode) error    { return os.Mkdir(name, perm) }
func (hostFS) chmod(name string, mode fs.FileMode) error    { return os.Chmod(name, mode) }
func (hostFS) chown(name string, uid, gid int) error        { return os.Chown(name, uid, gid) }
func (hostFS) lchown(name string, uid, gid int) error       { return os.Lchown(name, uid, gid) }
func (hostFS) chtimes(name string, at, mt time.Time) error  { return os.Chtimes(name, at, mt) }
func (hostFS) lchtimes(name string, at, mt time.Time) error { return lutimes(-1, name, at, mt) }
func (hostFS) truncate(name string, size int64) error       { return os.Truncate(name, size) }
func (hostFS) remove(name string) error                     { return pathErr("remove", name, syscall.Unlink(name)) }
func (hostFS) rmdir(name string) error                      { return pathErr("rmdir", name, syscall.Rmdir(name)) }
func (hostFS) rename(from, to string) error                 { return os.Rename(from, to) }
func (hostFS) link(from, to string) error                   { return os.Link(from, to) }
func (hostFS) symlink(target, link string) error            { return os.Symlink(target, link) }
func (hostFS) readlink(name string) (string, error)         { return os.Readlink(name) }
func (hostFS) rawLstat(name string) (fs.FileInfo, error)    { return os.Lstat(name) }
func (hostFS) rawReadlink(name string) (string, error)      { return os.Readlink(name) }
func (hostFS) statfs(name string) (fsStats, error)          { return statvfs(name) }
func (hostFS) close() error                                 { return nil }

func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: name, Err: err}
}

// rootFS confines names to a directory. Each name is first resolved the
// way a chroot would (absolute links start at the root, ".." stops
// there); the resolved name, free of links, is then used through os.Root,
// which refuses anything that would leave the directory, so a link
// changed in between cannot lead out either.
type rootFS struct {
	r *os.Root
}

func openRootFS(dir string) (*rootFS, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &rootFS{r: r}, nil
}

// rel turns a clean absolute name into os.Root's relative form.
func rel(name string) string {
	if name == "/" {
		return "."
	}
	return strings.TrimPrefix(name, "/")
}

// follow resolves every link of name, for operations that follow them.
func (f *rootFS) follow(name string) (string, error) {
	p, err := realpath(f, name)
	return rel(p), err
}

// parent resolves the links of name's directory but not of its last
// component, for operations on a link itself.
func (f *rootFS) parent(name string) (string, error) {
	if name == "/" {
		return ".", nil
	}
	dir, base := path.Split(name)
	d, err := realpath(f, path.Clean(dir))
	if err != nil {
		return "", err
	}
	return rel(path.Join(d, base)), nil
}

func (f *rootFS) openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	p, err := f.follow(name)
	if err != nil {
		return nil, err
	}
	return f.r.OpenFile(p, flag, perm)
}

func (f *rootFS) rawLstat(name string) (fs.FileInfo, error) { return f.r.Lstat(rel(name)) }
func (f *rootFS) rawReadlink(name string) (string, error)   { return f.r.Readlink(rel(name)) }

func (f *rootFS) lstat(name string) (fs.FileInfo, error) {
	p, err := f.parent(name)
	if err != nil {
		return nil, err
	}
	return f.r.Lstat(p)
}

func (f *rootFS) readlink(name string) (string, error) {
	p, err := f.parent(name)
	if err != nil {
		return "", err
	}
	return f.r.Readlink(p)
}

func (f *rootFS) stat(name string) (fs.FileInfo, error) {
	p, err := f.follow(name)
	if err != nil {
		return nil, err
	}
	return f.r.Stat(p)
}

// onFollowed runs op on name with its links resolved.
func (f *rootFS) onFollowed(name string, op func(string) error) error {
	p, err := f.follow(name)
	if err != nil {
		return err
	}
	return op(p)
}

// onParent runs op on name with its directory's links resolved.
func (f *rootFS) onParent(name string, op func(string) error) error {
	p, err := f.parent(name)
	if err != nil {
		return err
	}
	return op(p)
}

func (f *rootFS) mkdir(name string, perm fs.FileMode) error {
	return f.onParent(name, func(p string) error { return f.r.Mkdir(p, perm) })
}

func (f *rootFS) chmod(name string, mode fs.FileMode) error {
	return f.onFollowed(name, func(p string) error { return f.r.Chmod(p, mode) })
}

func (f *rootFS) chown(name string, uid, gid int) error {
	return f.onFollowed(name, func(p string) error { return f.r.Chown(p, uid, gid) })
}

func (f *rootFS) lchown(name string, uid, gid int) error {
	return f.onParent(name, func(p string) error { return f.r.Lchown(p, uid, gid) })
}

func (f *rootFS) chtimes(name string, at, mt time.Time) error {
	return f.onFollowed(name, func(p string) error { return f.r.Chtimes(p, at, mt) })
}

// lchtimes sets a link's own times through its directory, opened
// within the root.
func (f *rootFS) lchtimes(name string, at, mt time.Time) error {
	return f.onParent(name, func(p string) error {
		d, err := f.r.Open(path.Dir(p))
		if err != nil {
			return err
		}
		defer d.Close()
		return lutimes(int(d.Fd()), path.Base(p), at, mt)
	})
}

func (f *rootFS) truncate(name string, size int64) error {
	return f.onFollowed(name, func(p string) error {
		w, err := f.r.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer w.Close()
		return w.Truncate(size)
	})
}

// remove and rmdir check the kind first: os.Root.Remove takes either.
func (f *rootFS) remove(name string) error {
	return f.onParent(name, func(p string) error {
		if fi, err := f.r.Lstat(p); err == nil && fi.IsDir() {
			return &os.PathError{Op: "remove", Path: name, Err: syscall.EISDIR}
		}
		return f.r.Remove(p)
	})
}

func (f *rootFS) rmdir(name string) error {
	return f.onParent(name, func(p string) error {
		if fi, err := f.r.Lstat(p); err == nil && !fi.IsDir() {
			return &os.PathError{Op: "rmdir", Path: name, Err: syscall.ENOTDIR}
		}
		return f.r.Remove(p)
	})
}

func (f *rootFS) rename(from, to string) error {
	return f.onParent(from, func(a string) error {
		return f.onParent(to, func(b string) error { return f.r.Rename(a, b) })
	})
}

func (f *rootFS) link(from, to string) error {
	return f.onParent(from, func(a string) error {
		return f.onParent(to, func(b string) error { return f.r.Link(a, b) })
	})
}

// symlink makes a link whose target is stored as given: resolving it
// later happens within the root.
func (f *rootFS) symlink(target, link string) error {
	return f.onParent(link, func(p string) error { return f.r.Symlink(target, p) })
}

func (f *rootFS) statfs(name string) (fsStats, error) {
	var st fsStats
	err := f.onFollowed(name, func(p string) error {
		d, err := f.r.Open(p)
		if err != nil {
			return err
		}
		defer d.Close()
		st, err = fstatvfs(d)
		return err
	})
	return st, err
}

func (f *rootFS) close() error { return f.r.Close() }
