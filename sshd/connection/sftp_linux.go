package connection

import (
	"os"
	"syscall"

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
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return fsStats{}, err
	}
	return fsStatsOf(&st), nil
}

func fsStatsOf(st *unix.Statfs_t) fsStats {
	fsid := uint64(uint32(st.Fsid.Val[0]))<<32 | uint64(uint32(st.Fsid.Val[1]))
	return fsStats{uint64(st.Bsize), uint64(st.Frsize), st.Blocks, st.Bfree, st.Bavail,
		st.Files, st.Ffree, st.Ffree, fsid, uint64(st.Flags) & (stRdonly | stNosuid), uint64(st.Namelen)}
}
