package ipc

import (
	"fmt"
	"os"
	"time"
)

// Detach stops reading the connection without closing it and returns a
// duplicate of its socket, so that another process (offload sshd's
// session keeper, after a restart) reads the messages from here on: no
// message is half-read or lost between the two. Run returns; every
// pending Call fails. Send (replies to requests read before) still works
// until Close, which the caller makes once those are answered. Run must
// have been started.
func (p *Peer) Detach() (*os.File, error) {
	p.rmu.Lock()
	p.detached = true
	p.rmu.Unlock()
	f, err := p.c.File()
	p.c.SetReadDeadline(time.Now()) // wakes a read loop waiting for data
	<-p.done
	if err != nil {
		return nil, fmt.Errorf("ipc: detach: %w", err)
	}
	return f, nil
}

// Detached reports whether Detach was called: Run's return is then the
// hand-over, not a broken channel.
func (p *Peer) Detached() bool { return p.isDetached() }

func (p *Peer) isDetached() bool {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	return p.detached
}
