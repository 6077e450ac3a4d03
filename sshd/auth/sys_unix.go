//go:build unix

package auth

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/offload/offload/sshd/sandbox"
)

// fileOwner returns the uid owning fi.
func fileOwner(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

// openUserFile opens a file of t's user for reading, with the user's
// permissions (a root server must not be led by a symbolic link to a
// file only root may read), and without blocking on a FIFO a user may
// have put in place of a file; the caller checks it is regular. The
// user's identity, groups included (an NSS query), is looked up once per
// login, not per file.
func openUserFile(path string, t *target) (*os.File, error) {
	if t.ident == nil {
		id, err := identityOf(t.u)
		if err != nil {
			return nil, err
		}
		t.ident = &id
	}
	return sandbox.OpenAs(*t.ident, path, os.O_RDONLY|syscall.O_NONBLOCK)
}

// identityOf is u's uid, gid and groups.
func identityOf(u *user.User) (sandbox.Identity, error) {
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return sandbox.Identity{}, fmt.Errorf("auth: account %s: %w", u.Username, err)
	}
	id := sandbox.Identity{Uid: uint32(uid), Gid: uint32(gid)}
	gids, _ := u.GroupIds() // none known: the primary group alone
	for _, g := range gids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			id.Groups = append(id.Groups, uint32(n))
		}
	}
	return id, nil
}
