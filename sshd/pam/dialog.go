package pam

import (
	"context"
	"errors"
	"sync"
)

// Round is one step of a Dialog for the remote side: the texts PAM showed
// since the previous round, and the prompt to answer. The last round of a
// finished operation has no prompt (Prompt.Style is 0).
type Round struct {
	Texts  []Message // ErrorMsg and TextInfo messages, in order
	Prompt Message
}

// ErrNoPrompt is an answer when no prompt is waiting for one.
var ErrNoPrompt = errors.New("pam: answer without a prompt")

// Dialog runs one PAM operation in its own goroutine and carries its
// conversation as Rounds: Next returns each prompt (with the texts before
// it), Answer gives the response. This lets a monitor forward prompts to
// a client over IPC and answer PAM when the responses come back.
type Dialog struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	rounds  chan Round
	answers chan string
	done    chan struct{}

	mu      sync.Mutex
	waiting bool      // a round was handed out and awaits Answer
	pending []Message // texts not yet in a round
	err     error     // op's result, once done
}

// ErrAborted is the cause of a Dialog ended by Abort.
var ErrAborted = errors.New("pam: dialog aborted")

// StartDialog starts op, which must run its PAM call with the given
// context and Conversation (for example h.Authenticate(ctx, conv, 0)).
// ctx bounds the whole dialog (LoginGraceTime); the caller must call
// Next until it reports the end, or Abort.
func StartDialog(ctx context.Context, op func(ctx context.Context, conv Conversation) error) *Dialog {
	ctx, cancel := context.WithCancelCause(ctx)
	d := &Dialog{ctx: ctx, cancel: cancel, rounds: make(chan Round), answers: make(chan string), done: make(chan struct{})}
	go d.run(op)
	return d
}

func (d *Dialog) run(op func(context.Context, Conversation) error) {
	err := op(d.ctx, d.converse)
	d.mu.Lock()
	d.err = err
	d.mu.Unlock()
	close(d.done)
}

// converse is the operation's Conversation.
func (d *Dialog) converse(ctx context.Context, m Message) (string, error) {
	if ctx.Err() != nil {
		return "", context.Cause(ctx)
	}
	d.mu.Lock()
	if !m.Style.IsPrompt() {
		d.pending = append(d.pending, m)
		d.mu.Unlock()
		return "", nil
	}
	r := Round{Texts: d.pending, Prompt: m}
	d.pending = nil
	d.mu.Unlock()
	select {
	case d.rounds <- r:
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
	select {
	case a := <-d.answers:
		if ctx.Err() != nil { // the deadline won the race with the answer
			return "", context.Cause(ctx)
		}
		return a, nil
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}

// Next waits for the next prompt or the end of the operation. When the
// operation has ended, done is true, r holds the texts shown after the
// last prompt and err is the operation's result.
func (d *Dialog) Next(ctx context.Context) (r Round, done bool, err error) {
	d.mu.Lock()
	if d.waiting {
		d.mu.Unlock()
		return Round{}, false, errors.New("pam: Next before the last round was answered")
	}
	d.mu.Unlock()
	select {
	case r = <-d.rounds:
		d.mu.Lock()
		d.waiting = true
		d.mu.Unlock()
		return r, false, nil
	case <-d.done:
		d.mu.Lock()
		defer d.mu.Unlock()
		r.Texts, d.pending = d.pending, nil
		return r, true, d.err
	case <-ctx.Done():
		return Round{}, false, context.Cause(ctx)
	}
}

// Answer gives the response to the prompt of the last round. It fails
// with ErrNoPrompt when no prompt is waiting.
func (d *Dialog) Answer(ctx context.Context, resp string) error {
	d.mu.Lock()
	if !d.waiting {
		d.mu.Unlock()
		return ErrNoPrompt
	}
	d.waiting = false
	d.mu.Unlock()
	select {
	case d.answers <- resp:
		return nil
	case <-d.done:
		return d.result()
	case <-d.ctx.Done():
		return context.Cause(d.ctx)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (d *Dialog) result() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// Abort ends the dialog: a waiting conversation fails, and Abort waits
// for the operation to return and returns its result.
func (d *Dialog) Abort() error {
	d.cancel(ErrAborted)
	<-d.done
	return d.result()
}
