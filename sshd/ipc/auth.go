package ipc

import (
	"fmt"

	"github.com/offload/offload/sshd/wire"
)

// The messages of user authentication: a worker's requests to the
// monitor (DecideRequest, RespondRequest) and the monitor's decisions.
// They are plain structs: sshd/preauth converts from and to sshd/auth's
// types on the worker's side, sshd/monitor on the monitor's.

// Bounds of keyboard-interactive (as sshd/auth's MaxPrompts and
// MaxResponseLen; sshd/preauth checks they agree).
const (
	MaxPrompts     = 100
	MaxResponseLen = 1024
)

// AuthRequest is one SSH_MSG_USERAUTH_REQUEST as the worker parsed it
// (auth.Request's fields that the monitor decides on).
type AuthRequest struct {
	User            string // as the client sent it: "alice:style" keeps its style
	Service, Method string
	Algo            string // publickey
	HasSig          bool   // publickey
	KeyBlob, Sig    []byte // publickey
	ChangePassword  bool   // password
	Password        string // password; a secret: never logged
	HostKey         []byte // publickey-hostbound-v00@openssh.com
}

// DecideRequest carries one userauth request to the monitor.
type DecideRequest struct {
	ConnID uint64
	Req    *AuthRequest
}

// Marshal encodes m.
func (m *DecideRequest) Marshal() []byte {
	r := m.Req
	// One allocation of the final size: a buffer outgrown by append
	// would leave a copy of the password behind, uncleared.
	n := 8 + 8*4 + 2 + len(r.User) + len(r.Service) + len(r.Method) + len(r.Algo) + len(r.KeyBlob) + len(r.Sig) +
		len(r.Password) + len(r.HostKey)
	b := wire.AppendUint64(make([]byte, 0, n), m.ConnID)
	for _, s := range []string{r.User, r.Service, r.Method, r.Algo} {
		b = wire.AppendString(b, s)
	}
	b = wire.AppendBool(b, r.HasSig)
	b = wire.AppendBytes(b, r.KeyBlob)
	b = wire.AppendBytes(b, r.Sig)
	b = wire.AppendBool(b, r.ChangePassword)
	b = wire.AppendString(b, r.Password)
	return wire.AppendBytes(b, r.HostKey)
}

// ParseDecideRequest decodes a DecideRequest.
func ParseDecideRequest(p []byte) (*DecideRequest, error) {
	d := newDecoder(p)
	m := &DecideRequest{ConnID: d.Uint64("conn id"), Req: &AuthRequest{}}
	r := m.Req
	r.User, r.Service = d.string("user", maxUser), d.string("service", maxName)
	r.Method, r.Algo = d.string("method", maxName), d.string("algorithm", maxName)
	r.HasSig = d.boolean("has signature")
	r.KeyBlob, r.Sig = d.bytes("key blob", maxKeyBlob), d.bytes("signature", maxSig)
	r.ChangePassword = d.boolean("change password")
	r.Password = d.string("password", maxSecret)
	r.HostKey = d.bytes("host key", maxKeyBlob)
	return m, d.done(TypeDecide)
}

// RespondRequest carries a client's keyboard-interactive responses
// (SSH_MSG_USERAUTH_INFO_RESPONSE) to the monitor's auth.Responder.
type RespondRequest struct {
	ConnID    uint64
	Responses []string // secrets: never logged
}

// Marshal encodes m.
func (m *RespondRequest) Marshal() []byte {
	n := 8 + 4
	for _, r := range m.Responses {
		n += 4 + len(r)
	}
	b := wire.AppendUint64(make([]byte, 0, n), m.ConnID) // one allocation: no stray copy of a secret
	b = wire.AppendUint32(b, uint32(len(m.Responses)))
	for _, r := range m.Responses {
		b = wire.AppendString(b, r)
	}
	return b
}

// ParseRespondRequest decodes a RespondRequest: at most MaxPrompts
// responses of at most MaxResponseLen bytes.
func ParseRespondRequest(p []byte) (*RespondRequest, error) {
	d := newDecoder(p)
	m := &RespondRequest{ConnID: d.Uint64("conn id")}
	n := d.Uint32("responses")
	if n > MaxPrompts && d.err == nil {
		d.err = &wire.FieldError{Field: "responses", Err: fmt.Errorf("%d, at most %d", n, MaxPrompts)}
	}
	for i := uint32(0); i < n && d.err == nil && d.Err() == nil; i++ {
		m.Responses = append(m.Responses, d.string("response", MaxResponseLen))
	}
	return m, d.done(TypeRespond)
}

// Verdict is what a Decision says, numbered as auth.Verdict.
type Verdict uint8

// Verdicts.
const (
	VerdictFailure Verdict = iota
	VerdictSuccess
	VerdictKeyOK
	VerdictDisconnect
	VerdictInfoRequest
)

// Decision is the monitor's answer to one request (auth.Decision less
// the permissions of a Success: those stay with the monitor, and the
// worker learns only the verdict and the banner and prompts it must
// send).
type Decision struct {
	Verdict     Verdict
	Methods     []string   // Failure: the methods that can continue
	Partial     bool       // Failure: partial success
	Reason      uint32     // Disconnect: the SSH_MSG_DISCONNECT reason code
	Message     string     // Disconnect: the text for the client
	Cause       string     // Disconnect: the cause, for logs
	Banner      string     // sent before the answer when not empty
	InvalidUser bool       // the user is unknown or refused
	Info        *Challenge // InfoRequest: the prompts to send
}

// Challenge is a keyboard-interactive round (auth.Challenge).
type Challenge struct {
	Name, Instruction string
	Prompts           []Prompt
}

// Prompt is one question of a Challenge (auth.Prompt).
type Prompt struct {
	Text string
	Echo bool
}

// maxPrompt bounds the text of one prompt or instruction.
const maxPrompt = 4 * maxText

// Marshal encodes dec.
func (dec *Decision) Marshal() []byte {
	b := []byte{byte(dec.Verdict)}
	b = appendList(b, dec.Methods)
	b = wire.AppendBool(b, dec.Partial)
	b = wire.AppendUint32(b, dec.Reason)
	b = wire.AppendString(b, dec.Message)
	b = wire.AppendString(b, dec.Cause)
	b = wire.AppendString(b, dec.Banner)
	b = wire.AppendBool(b, dec.InvalidUser)
	if dec.Verdict == VerdictInfoRequest && dec.Info != nil {
		b = wire.AppendString(b, dec.Info.Name)
		b = wire.AppendString(b, dec.Info.Instruction)
		b = wire.AppendUint32(b, uint32(len(dec.Info.Prompts)))
		for _, pr := range dec.Info.Prompts {
			b = wire.AppendString(b, pr.Text)
			b = wire.AppendBool(b, pr.Echo)
		}
	}
	return b
}

// ParseDecision decodes a Decision.
func ParseDecision(p []byte) (*Decision, error) {
	d := newDecoder(p)
	dec := &Decision{Verdict: Verdict(d.Byte("verdict"))}
	dec.Methods = d.list("methods")
	dec.Partial = d.boolean("partial")
	dec.Reason, dec.Message = d.Uint32("reason"), d.string("message", maxText)
	dec.Cause = d.string("cause", maxText)
	dec.Banner = d.string("banner", maxBanner)
	dec.InvalidUser = d.boolean("invalid user")
	if dec.Verdict == VerdictInfoRequest {
		dec.Info = parseChallenge(d)
	}
	if err := d.done(TypeDecide); err != nil {
		return nil, err
	}
	if dec.Verdict > VerdictInfoRequest {
		return nil, &ProtocolError{Type: TypeDecide, Err: fmt.Errorf("verdict %d", dec.Verdict)}
	}
	return dec, nil
}

func parseChallenge(d *decoder) *Challenge {
	c := &Challenge{Name: d.string("name", maxPrompt), Instruction: d.string("instruction", maxPrompt)}
	n := d.Uint32("prompts")
	if n > MaxPrompts && d.err == nil {
		d.err = &wire.FieldError{Field: "prompts", Err: fmt.Errorf("%d, at most %d", n, MaxPrompts)}
	}
	for i := uint32(0); i < n && d.err == nil && d.Err() == nil; i++ {
		c.Prompts = append(c.Prompts, Prompt{Text: d.string("prompt", maxPrompt), Echo: d.boolean("echo")})
	}
	return c
}
