//go:build !linux

package connection

import (
	"os"
	"syscall"
)

func statAtime(st *syscall.Stat_t) uint32 { return 0 }

func statvfs(string) (fsStats, error) { return fsStats{}, syscall.EOPNOTSUPP }

func fstatvfs(*os.File) (fsStats, error) { return fsStats{}, syscall.EOPNOTSUPP }
