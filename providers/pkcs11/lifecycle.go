//go:build cgo && !nopkcs11

package pkcs11

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// gate counts the calls into the module that are in flight, so that Close
// finalizes the module only once none is: every exported method that may
// reach the module enters the gate first and leaves it when done. After
// Close began, enter fails and the method returns ErrClosed without
// touching the module (a call into a finalized module crashes the process).
type gate struct {
	state   atomic.Int64 // calls in flight, plus closedBit once Close began
	drained chan struct{}
	once    sync.Once
}

const closedBit = 1 << 62

func newGate() *gate { return &gate{drained: make(chan struct{})} }

// enter registers a call; false means the provider is closed.
func (g *gate) enter() bool {
	if g.state.Add(1)&closedBit != 0 {
		g.exit()
		return false
	}
	return true
}

func (g *gate) exit() {
	if g.state.Add(-1) == closedBit {
		g.once.Do(func() { close(g.drained) })
	}
}

// shut refuses new calls and waits up to timeout for those in flight. It
// returns how many were still running when it gave up (0: all done).
func (g *gate) shut(timeout time.Duration) int64 {
	if old := g.state.Or(closedBit); old&^closedBit == 0 {
		g.once.Do(func() { close(g.drained) })
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-g.drained:
		return 0
	case <-t.C:
		return g.state.Load() &^ closedBit
	}
}

// closedErr is the error of an operation refused because the provider is
// closed.
func closedErr(op, what string) error {
	return &Error{Op: op, What: what, Class: ClassClosed, Err: ErrClosed}
}

// enter enters the core's gate, or returns the ErrClosed error for op.
func (c *core) enter(op, what string) error {
	if !c.gate.enter() {
		return closedErr(op, what)
	}
	return nil
}

func (c *core) exit() { c.gate.exit() }

// deadline bounds one operation that has no context of its own (Sign,
// key agreement): the pool wait, retries and recovery together.
func (c *core) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	d := c.cfg.Deadline
	if d <= 0 {
		d = DefaultDeadline
	}
	return context.WithTimeout(ctx, d)
}

// ctxErr is the error of an operation whose context ended.
func ctxErr(ctx context.Context, op, token, what string) error {
	return &Error{Op: op, Token: token, What: what, Class: ClassOther, Err: context.Cause(ctx)}
}

// close refuses new calls, stops the probes, waits (bounded by
// Config.CloseTimeout) for calls in flight, then closes the idle
// sessions and releases the module. When calls are still running after
// the timeout — a module stuck in a call — the module is left
// initialized rather than finalized under them, and close says so.
func (c *core) close() error {
	c.closeOnce.Do(func() {
		close(c.stop) // ends pool waits, backoffs and the probes
		timeout := c.cfg.CloseTimeout
		if timeout <= 0 {
			timeout = DefaultCloseTimeout
		}
		left := c.gate.shut(timeout)
		c.wg.Wait()
		if left > 0 {
			c.log.Error("closing with calls into the module still running; the module is not finalized", "calls", left, "after", timeout)
			c.closeErr = fmt.Errorf("pkcs11: close: %d calls into %s still running after %v; the module was left initialized", left, c.mod.path, timeout)
			return
		}
		c.mod.mu.RLock()
		for _, t := range c.tokens {
			t.mu.Lock()
			for _, s := range t.idle {
				if s.gen == c.mod.gen.Load() {
					_ = c.api.CloseSession(s.h)
				}
			}
			t.idle = nil
			t.mu.Unlock()
		}
		c.mod.mu.RUnlock()
		c.closeErr = c.mod.release()
	})
	return c.closeErr
}
