package monitor

import (
	"errors"
	"net/netip"
	"os/exec"
	"slices"
	"time"

	"github.com/offload/offload/sshd/ipc"
)

// Crash attribution. A pre-auth worker serves many clients, so its death
// must not be charged to all of them (one client able to crash a worker
// would get every other client on it refused: a denial-of-service
// amplifier). The monitor charges it to a client only when that client
// can be shown to have caused it:
//
//   - the worker marks in a table it shares with the monitor
//     (ipc.BusyTable) the connection whose input it is working on; a
//     death while exactly one connection was marked is that connection's
//     crash (the penalty "caused crash");
//   - a source whose connections were on dead workers twice in a row
//     (two deaths, with no connection of that source ending otherwise in
//     between) is charged with the second, once.
//
// Every other connection the worker held ends as ipc.OutcomeLost, which
// no penalty follows. A worker that exits with status 0 (it lost its
// channel to the monitor, say, under descriptor pressure) did not crash:
// its connections are lost, nobody is charged. Nor is anybody charged for
// a worker the monitor stopped, or for a post-auth process: only
// pre-auth outcomes are penalised.

// maxSuspects bounds the sources remembered as having been on a dead
// worker; suspectMemory is how long one is remembered.
const (
	maxSuspects   = 4096
	suspectMemory = 10 * time.Minute
)

type suspect struct {
	death uint64 // the worker death it was seen on
	at    time.Time
}

// crashOutcomes decides how each connection of dead child c ends.
func (m *Monitor) crashOutcomes(c *child, err error, stopped bool, conns []*mconn) map[*mconn]ipc.Outcome {
	outs := make(map[*mconn]ipc.Outcome, len(conns))
	for _, conn := range conns {
		outs[conn] = ipc.OutcomeLost
	}
	if stopped || c.role != ipc.RolePreauth || !crashed(err) {
		return outs
	}
	busy := c.busy.Busy()
	var marked []*mconn
	for _, conn := range conns {
		if slices.Contains(busy, conn.id) {
			marked = append(marked, conn)
		}
	}
	if len(marked) == 1 {
		outs[marked[0]] = ipc.OutcomeCrash
		m.log.Info("monitor: pre-auth worker died while working on one connection's input; charging it",
			"proc", c.name, "conn", marked[0].id, "remote", marked[0].remote.String())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deaths++
	now := time.Now()
	charged := map[netip.Addr]bool{}
	for _, conn := range conns {
		src := addrOf(conn.remote)
		s, seen := m.suspects[src]
		switch {
		case outs[conn] == ipc.OutcomeCrash:
			charged[src] = true
			delete(m.suspects, src)
		case seen && s.death < m.deaths && !charged[src]:
			outs[conn] = ipc.OutcomeCrash // on a dead worker twice in a row
			charged[src] = true
			delete(m.suspects, src)
		case !charged[src]:
			m.rememberSuspect(src, suspect{death: m.deaths, at: now})
		}
	}
	return outs
}

// rememberSuspect records src, forgetting old entries when the table is
// full (m.mu held).
func (m *Monitor) rememberSuspect(src netip.Addr, s suspect) {
	if _, ok := m.suspects[src]; !ok && len(m.suspects) >= maxSuspects {
		for a, old := range m.suspects {
			if s.at.Sub(old.at) > suspectMemory {
				delete(m.suspects, a)
			}
		}
		if len(m.suspects) >= maxSuspects {
			return
		}
	}
	m.suspects[src] = s
}

// cleared forgets that src was on a dead worker: one of its connections
// ended otherwise.
func (m *Monitor) cleared(src netip.Addr) {
	m.mu.Lock()
	delete(m.suspects, src)
	m.mu.Unlock()
}

// crashed reports whether a child's exit (cmd.Wait's error) was a crash:
// a signal or a non-zero status, not a clean exit.
func crashed(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return !ee.Success()
	}
	return err != nil
}
