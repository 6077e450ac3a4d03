package connection

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// agentState is a connection's forwarded agent: a socket in a private
// directory owned by the user, set as SSH_AUTH_SOCK for its sessions and
// removed when the connection ends. As OpenSSH, one per connection: the
// first auth-agent-req@openssh.com creates it, later ones are refused but
// every session started after it gets SSH_AUTH_SOCK.
type agentState struct {
	mu     sync.Mutex
	asked  bool
	dir    string
	path   string
	l      net.Listener
	closed bool
}

// agentReq answers auth-agent-req@openssh.com.
func (s *session) agentReq(b []byte) error {
	if len(b) != 0 {
		return refuse("auth-agent-req", "trailing bytes")
	}
	m := s.m
	switch {
	case m.cfg.NoAgentForwarding:
		return refuse("auth-agent-req", "AllowAgentForwarding no")
	case m.perm.NoAgentForwarding:
		return refuse("auth-agent-req", "no-agent-forwarding set for this login")
	}
	a, err := m.account()
	if err != nil {
		return err
	}
	return m.agent.start(m, a)
}

// agentSocket is SSH_AUTH_SOCK for new sessions, "" without forwarding.
func (m *mux) agentSocket() string {
	m.agent.mu.Lock()
	defer m.agent.mu.Unlock()
	return m.agent.path
}

func (st *agentState) start(m *mux, a *account) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.asked || st.closed {
		return refuse("auth-agent-req", "agent forwarding requested twice")
	}
	st.asked = true
	dir, err := os.MkdirTemp("", "ssh-")
	if err != nil {
		return refuse("auth-agent-req", "cannot make the socket directory: %v", err)
	}
	path := filepath.Join(dir, "agent."+strconv.Itoa(os.Getpid()))
	umaskMu.Lock()
	old := syscall.Umask(0o177)
	l, err := net.Listen("unix", path)
	syscall.Umask(old)
	umaskMu.Unlock()
	if err == nil && a.needsSwitch() {
		err = chownAll(int(a.uid), int(a.gid), dir, path)
	}
	if err != nil {
		if l != nil {
			l.Close()
		}
		os.RemoveAll(dir)
		return refuse("auth-agent-req", "cannot listen for the agent: %v", err)
	}
	st.dir, st.path, st.l = dir, path, l
	m.goSafe("agent listener", nil, func() { m.acceptAgent(l) })
	m.log.Debug("connection: agent forwarding", "socket", path)
	return nil
}

// chownAll gives the files to the user (a root server in the in-process
// mode made them).
func chownAll(uid, gid int, paths ...string) error {
	for _, p := range paths {
		if err := os.Lchown(p, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// acceptAgent opens an auth-agent@openssh.com channel for every program
// that connects to the socket.
func (m *mux) acceptAgent(l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		m.goSafe("agent connection", nil, func() {
			defer conn.Close()
			c, err := m.openChannel("auth-agent@openssh.com", nil)
			if err != nil {
				m.log.Info("connection: agent channel not opened", "err", err)
				return
			}
			splice(c, conn)
			c.Close()
		})
	}
}

// close removes the socket and its directory.
func (st *agentState) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	if st.l != nil {
		st.l.Close()
		os.RemoveAll(st.dir)
		st.l, st.path = nil, ""
	}
}
