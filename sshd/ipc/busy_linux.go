package ipc

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

const busyBytes = BusySlots * 8

func newBusyTable() (*BusyTable, *os.File, error) {
	fd, err := unix.MemfdCreate("offload-busy", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("ipc: busy table: %w", err)
	}
	f := os.NewFile(uintptr(fd), "offload-busy")
	if err := unix.Ftruncate(fd, busyBytes); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("ipc: busy table: %w", err)
	}
	t, err := mapBusyTable(fd)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return t, f, nil
}

func mapBusyTable(fd int) (*BusyTable, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size != busyBytes {
		return nil, fmt.Errorf("ipc: busy table: not a table (%v)", err)
	}
	mem, err := unix.Mmap(fd, 0, busyBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("ipc: busy table: %w", err)
	}
	slots := unsafe.Slice((*atomic.Uint64)(unsafe.Pointer(&mem[0])), BusySlots)
	return &BusyTable{slots: slots, unmap: func() error { return unix.Munmap(mem) }}, nil
}
