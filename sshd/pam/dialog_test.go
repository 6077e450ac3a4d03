package pam

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeOp converses as a two-factor module would: a text, a password
// prompt, a code prompt, a closing text; it succeeds when both answers
// are right.
func fakeOp(ctx context.Context, conv Conversation) error {
	conv(ctx, Message{TextInfo, "welcome"})
	pw, err := conv(ctx, Message{PromptEchoOff, "Password: "})
	if err != nil {
		return err
	}
	code, err := conv(ctx, Message{PromptEchoOn, "One-time password (OATH) for `u': "})
	if err != nil {
		return err
	}
	conv(ctx, Message{ErrorMsg, "bye"})
	if pw != "secret" || code != "123456" {
		return ErrAuth
	}
	return nil
}

func TestDialogRounds(t *testing.T) {
	ctx := context.Background()
	d := StartDialog(ctx, fakeOp)
	r, done, err := d.Next(ctx)
	if err != nil || done || r.Prompt.Style != PromptEchoOff || len(r.Texts) != 1 || r.Texts[0].Text != "welcome" {
		t.Fatalf("round 1 = %+v, done %v, err %v", r, done, err)
	}
	if _, _, err := d.Next(ctx); err == nil {
		t.Fatal("Next before Answer succeeded")
	}
	if err := d.Answer(ctx, "secret"); err != nil {
		t.Fatal(err)
	}
	if err := d.Answer(ctx, "again"); !errors.Is(err, ErrNoPrompt) {
		t.Fatalf("second answer: %v, want ErrNoPrompt", err)
	}
	r, done, err = d.Next(ctx)
	if err != nil || done || r.Prompt.Style != PromptEchoOn || len(r.Texts) != 0 {
		t.Fatalf("round 2 = %+v, done %v, err %v", r, done, err)
	}
	d.Answer(ctx, "123456")
	r, done, err = d.Next(ctx)
	if !done || err != nil || len(r.Texts) != 1 || r.Texts[0].Style != ErrorMsg {
		t.Fatalf("end = %+v, done %v, err %v", r, done, err)
	}
}

func TestDialogWrongAnswer(t *testing.T) {
	ctx := context.Background()
	d := StartDialog(ctx, fakeOp)
	for _, a := range []string{"wrong", "123456"} {
		if _, done, err := d.Next(ctx); done || err != nil {
			t.Fatalf("Next: done %v, %v", done, err)
		}
		d.Answer(ctx, a)
	}
	if _, done, err := d.Next(ctx); !done || !errors.Is(err, ErrAuth) {
		t.Fatalf("end: done %v, err %v; want ErrAuth", done, err)
	}
}

// A client that never answers is cut off by the dialog's deadline
// (LoginGraceTime): the operation's conversation fails and Next reports
// the end.
func TestDialogDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	d := StartDialog(ctx, fakeOp)
	if _, done, err := d.Next(context.Background()); done || err != nil {
		t.Fatalf("Next: done %v, %v", done, err)
	}
	// no answer before the deadline: the conversation fails with it
	<-d.ctx.Done() // the dialog's context, cancelled just after ctx
	d.Answer(context.Background(), "late")
	_, done, err := d.Next(context.Background())
	if !done || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after the deadline: done %v, err %v; want the deadline", done, err)
	}
}

func TestDialogAbort(t *testing.T) {
	d := StartDialog(context.Background(), fakeOp)
	d.Next(context.Background())
	if err := d.Abort(); !errors.Is(err, ErrAborted) {
		t.Fatalf("Abort = %v, want ErrAborted", err)
	}
	if err := d.Answer(context.Background(), "late"); !errors.Is(err, ErrNoPrompt) && !errors.Is(err, ErrAborted) {
		t.Fatalf("Answer after Abort = %v", err)
	}
}
