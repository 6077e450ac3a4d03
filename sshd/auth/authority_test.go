package auth

import (
	"context"
	"errors"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

// scripted is an Authority that answers from a list and records what it
// was asked.
type scripted struct {
	begun    []string
	asked    []string
	answers  []*Decision
	beginErr error
}

func (a *scripted) Begin(_ context.Context, user, service string) (string, error) {
	a.begun = append(a.begun, user+"/"+service)
	return "hello " + user + "\n", a.beginErr
}

func (a *scripted) Decide(_ context.Context, req *Request) (*Decision, error) {
	a.asked = append(a.asked, req.Method)
	if len(a.answers) == 0 {
		return nil, errors.New("no more answers")
	}
	d := a.answers[0]
	a.answers = a.answers[1:]
	return d, nil
}

func startServe(t *testing.T, a Authority) (*testClient, <-chan result) {
	t.Helper()
	server, client := memPipe(testSessionID)
	ch := make(chan result, 1)
	ctx, cancel := testenv.Context(t)
	go func() {
		p, err := Serve(ctx, server, a, nil)
		ch <- result{p, err}
	}()
	t.Cleanup(func() { cancel(); server.Close(); client.Close() })
	return &testClient{t: t, pc: client, user: "alice", sid: testSessionID}, ch
}

// TestServeFollowsAuthority: the conversation sends what the Authority
// decides, calls Begin once with the first request's user and the banner
// it returns goes out before the first answer.
func TestServeFollowsAuthority(t *testing.T) {
	a := &scripted{answers: []*Decision{
		{Verdict: Failure, Methods: []string{"publickey", "password"}},
		{Verdict: Failure, Methods: []string{"password"}, Partial: true},
		{Verdict: Success, Perms: &perm.Permissions{User: "alice", Method: "password"}},
	}}
	c, ch := startServe(t, a)
	c.startService()
	wantFailure(t, c.none(), "publickey,password")
	p := c.password("x")
	r := wire.NewReader(p)
	if r.Byte("msg") != wire.MsgUserAuthFailure || r.String("methods") != "password" || !r.Bool("partial") {
		t.Fatalf("want a partial-success FAILURE, got %x", p)
	}
	if got := c.password("y"); got[0] != wire.MsgUserAuthSuccess {
		t.Fatalf("want SUCCESS, got %x", got)
	}
	res := <-ch
	if res.err != nil || res.perms.Method != "password" {
		t.Fatalf("Serve: %+v %v", res.perms, res.err)
	}
	if len(a.begun) != 1 || a.begun[0] != "alice/ssh-connection" || len(c.banners) != 1 {
		t.Fatalf("Begin calls %v, banners %q", a.begun, c.banners)
	}
}

// TestServeDisconnectsOnAuthorityFailure: an Authority that fails, that
// grants without permissions or that says disconnect ends the
// conversation with SSH_MSG_DISCONNECT; nothing is granted.
func TestServeDisconnectsOnAuthorityFailure(t *testing.T) {
	cases := []struct {
		name   string
		a      *scripted
		reason uint32
		is     error
	}{
		{"error", &scripted{}, wire.DisconnectByApplication, nil},
		{"success without permissions", &scripted{answers: []*Decision{{Verdict: Success}}}, wire.DisconnectByApplication, errNoPerms},
		{"disconnect", &scripted{answers: []*Decision{{Verdict: Disconnect, Reason: wire.DisconnectNoMoreAuthMethodsAvailable,
			Message: "too many", Err: ErrTooManyFailures}}}, wire.DisconnectNoMoreAuthMethodsAvailable, ErrTooManyFailures},
		{"begin fails", &scripted{beginErr: errors.New("monitor gone")}, wire.DisconnectByApplication, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, ch := startServe(t, tc.a)
			c.startService()
			c.write(c.header("none"))
			res := <-ch
			var de *DisconnectError
			if res.perms != nil || !errors.As(res.err, &de) || de.Reason != tc.reason {
				t.Fatalf("Serve: %+v %v, want a disconnect with reason %d", res.perms, res.err, tc.reason)
			}
			if tc.is != nil && !errors.Is(res.err, tc.is) {
				t.Fatalf("error %v does not wrap %v", res.err, tc.is)
			}
		})
	}
}

// TestAuthorityRefusesChangeOfUser: the decision side does not trust the
// conversation to pin the user: a request for another user after Begin is
// a disconnect, whoever sends it.
func TestAuthorityRefusesChangeOfUser(t *testing.T) {
	w := newWorld(t)
	a, err := NewAuthority(w.cfg, testSessionID, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := a.Decide(ctx, &Request{User: "alice", Service: "ssh-connection", Method: "none"}); err == nil {
		t.Fatal("Decide before Begin was answered")
	}
	if _, err := a.Begin(ctx, "alice", "ssh-connection"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Begin(ctx, "bob", "ssh-connection"); err == nil {
		t.Fatal("a second Begin was accepted")
	}
	d, err := a.Decide(ctx, &Request{User: "bob", Service: "ssh-connection", Method: "none"})
	if err != nil || d.Verdict != Disconnect || !errors.Is(d.Err, ErrUserChanged) {
		t.Fatalf("request for another user: %+v %v", d, err)
	}
}

// TestAuthorityBoundsRequests: a liar that sends endless PK_OK queries to
// the decision side is cut off at ten times MaxAuthTries.
func TestAuthorityBoundsRequests(t *testing.T) {
	w := newWorld(t)
	w.cfg.MaxAuthTries = 2
	a, _ := NewAuthority(w.cfg, testSessionID, nil)
	ctx := context.Background()
	a.Begin(ctx, "alice", "ssh-connection")
	key := newEd25519(t)
	w.authorize(authLine("", key.PublicKey()))
	req := &Request{User: "alice", Service: "ssh-connection", Method: "publickey", Algo: "ssh-ed25519", KeyBlob: key.PublicKey().Marshal()}
	for i := 0; i < 20; i++ {
		if d, _ := a.Decide(ctx, req); d.Verdict != KeyOK {
			t.Fatalf("query %d: %+v", i, d)
		}
	}
	if d, _ := a.Decide(ctx, req); d.Verdict != Disconnect || !errors.Is(d.Err, ErrTooManyRequests) {
		t.Fatalf("query 21: %+v, want a disconnect", d)
	}
}
