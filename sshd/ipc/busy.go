package ipc

import (
	"os"
	"sync"
	"sync/atomic"
)

// A BusyTable is a page of memory a pre-auth worker shares with the
// monitor, in which it marks each connection whose client bytes it is
// working on: a connection's slot holds its id from the moment a read
// of its socket returns bytes until the worker reads that socket again
// or waits for the monitor. When the worker dies, the monitor reads the
// table: a death while exactly one connection was marked is charged to
// that connection's client; a connection that sat waiting for its
// client was not the cause. Marking costs two atomic stores per read.
//
// The table is what the worker says; it only narrows down which of the
// worker's own connections is charged, never reaches another worker's.
type BusyTable struct {
	slots []atomic.Uint64
	unmap func() error

	mu   sync.Mutex
	free []int // worker: unused slot indexes
}

// BusySlots is the number of connections a table can mark at once; a
// connection beyond them is served unmarked (never charged by the
// table).
const BusySlots = 4096

// BusyFDEnv names the environment variable with the descriptor of a
// pre-auth worker's BusyTable.
const BusyFDEnv = "OFFLOAD_SSHD_BUSY_FD"

// NewBusyTable makes a table for a worker about to be started; the file
// is for the worker (exec.Cmd.ExtraFiles), the caller closes its copy
// once the worker is started.
func NewBusyTable() (*BusyTable, *os.File, error) { return newBusyTable() }

// OpenBusyTable maps the table the monitor passed in f and closes f.
func OpenBusyTable(f *os.File) (*BusyTable, error) {
	defer f.Close()
	return mapBusyTable(int(f.Fd()))
}

// Busy returns the ids of the connections marked now.
func (t *BusyTable) Busy() []uint64 {
	if t == nil {
		return nil
	}
	var ids []uint64
	for i := range t.slots {
		if id := t.slots[i].Load(); id != 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

// Close unmaps the table.
func (t *BusyTable) Close() error {
	if t == nil || t.unmap == nil {
		return nil
	}
	return t.unmap()
}

// Slot gives connection id a slot, or nil when t is nil or full (a nil
// *BusySlot marks nothing).
func (t *BusyTable) Slot(id uint64) *BusySlot {
	if t == nil || id == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.free == nil {
		t.free = make([]int, 0, len(t.slots))
		for i := len(t.slots) - 1; i >= 0; i-- {
			t.free = append(t.free, i)
		}
	}
	if len(t.free) == 0 {
		return nil
	}
	i := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	return &BusySlot{t: t, i: i, id: id}
}

// BusySlot is one connection's slot in a worker's BusyTable.
type BusySlot struct {
	t  *BusyTable
	i  int
	id uint64
}

// Busy marks the connection as being worked on.
func (s *BusySlot) Busy() {
	if s != nil {
		s.t.slots[s.i].Store(s.id)
	}
}

// Idle marks the connection as waiting (for its client or the monitor).
func (s *BusySlot) Idle() {
	if s != nil {
		s.t.slots[s.i].Store(0)
	}
}

// Release frees the slot when the connection has ended here.
func (s *BusySlot) Release() {
	if s == nil {
		return
	}
	s.Idle()
	s.t.mu.Lock()
	s.t.free = append(s.t.free, s.i)
	s.t.mu.Unlock()
}
