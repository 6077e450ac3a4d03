package ipc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// Environment of a child process: the role to run, and the descriptor of
// its socket to the monitor.
const (
	RoleEnv   = "OFFLOAD_SSHD_ROLE"
	ChildFD   = 3 // the first of exec.Cmd.ExtraFiles
	RoleFDEnv = "OFFLOAD_SSHD_FD"
)

// Roles.
const (
	RolePreauth   = "preauth"
	RolePostauth  = "postauth"
	RolePAMKeeper = "pam-keeper" // the root PAM keeper of a post-auth process (UsePAM yes)
	// RoleLegacyPAMKeeper is RolePAMKeeper as monitors before 2026-12-05
	// named it: a child started by one still runs (an upgrade while the
	// daemon runs).
	RoleLegacyPAMKeeper = "session"
)

// configTimeout bounds the wait for the monitor's first message.
const configTimeout = 30 * time.Second

// Child is the child's side of its monitor connection while it starts:
// Accept reads the configuration, then Serve hands every later message
// to the role's handler.
type Child struct {
	Peer   *Peer
	Config *ChildConfig
	next   atomic.Pointer[Handler]
	config chan *Message
}

// OpenChild connects a child to its monitor on the inherited socket and
// waits for its configuration.
func OpenChild() (*Child, error) {
	fd := ChildFD
	if v := os.Getenv(RoleFDEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("ipc: %s=%q: %w", RoleFDEnv, v, err)
		}
		fd = n
	}
	c := &Child{config: make(chan *Message, 1)}
	p, err := NewPeer(os.NewFile(uintptr(fd), "monitor"), c.handle)
	if err != nil {
		return nil, err
	}
	c.Peer = p
	go p.Run()
	return c, c.readConfig()
}

func (c *Child) handle(m *Message) {
	if h := c.next.Load(); h != nil {
		(*h)(m)
		return
	}
	select {
	case c.config <- m:
	default:
		closeFiles(m.Files) // nothing but the configuration may come first
	}
}

func (c *Child) readConfig() error {
	ctx, cancel := context.WithTimeout(context.Background(), configTimeout)
	defer cancel()
	select {
	case m := <-c.config:
		closeFiles(m.Files)
		if m.Type != TypeConfig {
			return &ProtocolError{Type: m.Type, Err: errors.New("expected the configuration first")}
		}
		cfg, err := ParseChildConfig(m.Payload)
		c.Config = cfg
		return err
	case <-c.Peer.Done():
		return fmt.Errorf("ipc: monitor went away before the configuration: %w", c.Peer.Err())
	case <-ctx.Done():
		return errors.New("ipc: no configuration from the monitor")
	}
}

// Serve makes h the handler of every later message and tells the monitor
// the child is ready.
func (c *Child) Serve(h Handler) error {
	c.next.Store(&h)
	return c.Peer.Notify(TypeReady, nil)
}
