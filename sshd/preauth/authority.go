package preauth

import (
	"context"
	"errors"

	"github.com/offload/offload/internal/secret"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/perm"
)

// authority is the worker's auth.Authority: every decision is the
// monitor's. A Success carries placeholder permissions: the real ones
// stay with the monitor, which gives them to the post-auth process.
type authority struct {
	peer   *ipc.Peer
	id     uint64
	failed bool   // a request was refused: the connection ends as authfail
	user   string // of the requests
	begun  bool   // the monitor has begun the login
	busy   *ipc.BusySlot
}

// Begin only notes the user: the monitor begins the login with the first
// decision (ipc.TypeBeginDecide), one round trip fewer per connection,
// and its banner comes back in that decision.
func (a *authority) Begin(_ context.Context, user, _ string) (string, error) {
	a.user = user
	return "", nil
}

func (a *authority) Decide(ctx context.Context, req *auth.Request) (*auth.Decision, error) {
	crashHook(req.User)
	t := ipc.TypeDecide
	if !a.begun {
		t, a.begun = ipc.TypeBeginDecide, true
	}
	payload := (&ipc.DecideRequest{ConnID: a.id, Req: authRequest(req)}).Marshal()
	b, err := a.call(ctx, t, payload)
	secret.Wipe(payload) // it may hold a password
	if err != nil {
		return nil, err
	}
	d, err := parseDecision(b)
	if err != nil {
		return nil, err
	}
	a.user = req.User
	return a.note(d, req.Method), nil
}

// note records a failure and gives a Success placeholder permissions.
func (a *authority) note(d *auth.Decision, method string) *auth.Decision {
	switch d.Verdict {
	case auth.Success:
		d.Perms = &perm.Permissions{User: a.user, Method: method}
	case auth.Failure:
		a.failed = a.failed || method != "none"
	}
	return d
}

// Respond passes keyboard-interactive responses to the monitor.
func (a *authority) Respond(ctx context.Context, responses []string) (*auth.Decision, error) {
	payload := (&ipc.RespondRequest{ConnID: a.id, Responses: responses}).Marshal()
	b, err := a.call(ctx, ipc.TypeRespond, payload)
	secret.Wipe(payload)
	if err != nil {
		return nil, err
	}
	d, err := parseDecision(b)
	if err != nil {
		return nil, err
	}
	return a.note(d, "keyboard-interactive"), nil
}

// call asks the monitor, the connection marked idle meanwhile (the
// monitor's decision may take a while: PAM, a keys command).
func (a *authority) call(ctx context.Context, t ipc.Type, payload []byte) ([]byte, error) {
	a.busy.Idle()
	defer a.busy.Busy()
	return a.peer.Call(ctx, t, payload)
}

// authRequest is req as the monitor is asked about it. The password is
// the same string, not a copy: the caller's clearing covers it.
func authRequest(req *auth.Request) *ipc.AuthRequest {
	return &ipc.AuthRequest{User: req.NameSent(), Service: req.Service, Method: req.Method, Algo: req.Algo,
		HasSig: req.HasSig, KeyBlob: req.KeyBlob, Sig: req.Sig, ChangePassword: req.ChangePassword,
		Password: req.Password, HostKey: req.HostKey}
}

// parseDecision decodes the monitor's decision as an auth.Decision. A
// Success carries no permissions yet (note adds placeholders): the
// worker never serves the session.
func parseDecision(b []byte) (*auth.Decision, error) {
	m, err := ipc.ParseDecision(b)
	if err != nil {
		return nil, err
	}
	d := &auth.Decision{Verdict: auth.Verdict(m.Verdict), Methods: m.Methods, Partial: m.Partial, Reason: m.Reason,
		Message: m.Message, Banner: m.Banner, InvalidUser: m.InvalidUser}
	if m.Cause != "" {
		d.Err = errors.New(m.Cause)
	}
	if m.Info != nil {
		d.Info = &auth.Challenge{Name: m.Info.Name, Instruction: m.Info.Instruction}
		for _, p := range m.Info.Prompts {
			d.Info.Prompts = append(d.Info.Prompts, auth.Prompt(p))
		}
	}
	return d, nil
}
