package sftp

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func statAtime(st *syscall.Stat_t) uint32 { return uint32(st.Atim.Sec) }

func statvfs(path string) (fsStats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fsStats{}, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	return fsStatsOf(&st), nil
}

func fstatvfs(f *os.File) (fsStats, error) {
	var st unix.Statfs_t
	rc, err := f.SyscallConn()
	if err != nil {
		return fsStats{}, err
	}
	if cerr := rc.Control(func(fd uintptr) { err = unix.Fstatfs(int(fd), &st) }); cerr != nil {
		return fsStats{}, cerr
	}
	if err != nil {
		return fsStats{}, &os.PathError{Op: "fstatfs", Path: f.Name(), Err: err}
	}
	return fsStatsOf(&st), nil
}

func fsStatsOf(st *unix.Statfs_t) fsStats {
	fsid := uint64(uint32(st.Fsid.Val[0]))<<32 | uint64(uint32(st.Fsid.Val[1]))
	return fsStats{uint64(st.Bsize), uint64(st.Frsize), st.Blocks, st.Bfree, st.Bavail,
		st.Files, st.Ffree, st.Ffree, fsid, uint64(st.Flags) & (stRdonly | stNosuid), uint64(st.Namelen)}
}

// lutimes sets the times of name (relative to the directory dirfd, or to
// the working directory when dirfd is -1) without following a link.
func lutimes(dirfd int, name string, at, mt time.Time) error {
	if dirfd < 0 {
		dirfd = unix.AT_FDCWD
	}
	ts := []unix.Timespec{unix.NsecToTimespec(at.UnixNano()), unix.NsecToTimespec(mt.UnixNano())}
	return pathErr("lutimes", name, unix.UtimesNanoAt(dirfd, name, ts, unix.AT_SYMLINK_NOFOLLOW))
}
