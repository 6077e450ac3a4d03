//go:build !linux

package sftp

import (
	"os"
	"syscall"
	"time"
)

func statAtime(st *syscall.Stat_t) uint32 { return 0 }

func statvfs(string) (fsStats, error) { return fsStats{}, syscall.EOPNOTSUPP }

func fstatvfs(*os.File) (fsStats, error) { return fsStats{}, syscall.EOPNOTSUPP }

func lutimes(int, string, time.Time, time.Time) error { return syscall.EOPNOTSUPP }
