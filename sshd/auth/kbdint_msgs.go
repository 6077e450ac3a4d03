package auth

import (
	"errors"
	"fmt"

	"github.com/offload/offload/sshd/wire"
)

// Message numbers of keyboard-interactive (RFC 4256 §3.2, §3.4); 60 is
// also SSH_MSG_USERAUTH_PK_OK, told apart by the method in progress.
const (
	msgInfoRequest  = 60
	msgInfoResponse = 61
)

// Bounds on keyboard-interactive.
const (
	// MaxPrompts bounds the prompts of one INFO_REQUEST, and so the
	// responses accepted in an INFO_RESPONSE (OpenSSH allows 100).
	MaxPrompts = 100
	// MaxResponseLen bounds one response.
	MaxResponseLen = 1024
	maxPromptLen   = 4096 // a prompt or instruction text from PAM
)

// Prompt is one question of an INFO_REQUEST.
type Prompt struct {
	Text string
	Echo bool
}

// Challenge is SSH_MSG_USERAUTH_INFO_REQUEST: what Serve sends for a
// Decision with Verdict InfoRequest.
type Challenge struct {
	Name, Instruction string
	Prompts           []Prompt
}

// appendInfoRequest encodes an INFO_REQUEST with an empty language tag.
func appendInfoRequest(b []byte, r *Challenge) []byte {
	b = append(b, msgInfoRequest)
	b = wire.AppendString(b, r.Name)
	b = wire.AppendString(b, r.Instruction)
	b = wire.AppendString(b, "")
	b = wire.AppendUint32(b, uint32(len(r.Prompts)))
	for _, p := range r.Prompts {
		b = wire.AppendString(b, p.Text)
		b = wire.AppendBool(b, p.Echo)
	}
	return b
}

var errResponseCount = errors.New("number of responses differs from the prompts sent")

// parseInfoResponse decodes an INFO_RESPONSE answering want prompts.
func parseInfoResponse(p []byte, want int) ([]string, error) {
	r := newReader(p)
	r.Byte("message number")
	n := r.Uint32("number of responses")
	if r.Err() == nil && n != uint32(want) {
		return nil, &ParseError{"info response", fmt.Errorf("%w: %d, want %d", errResponseCount, n, want)}
	}
	resp := make([]string, 0, want)
	for i := 0; i < want && r.Err() == nil; i++ {
		resp = append(resp, r.string("response", MaxResponseLen))
	}
	if err := r.done(); err != nil {
		return nil, &ParseError{"info response", err}
	}
	return resp, nil
}

// parseKbdInt reads the fields of a keyboard-interactive request: the
// deprecated language tag and the submethods hint.
func (req *Request) parseKbdInt(r *reader) {
	r.string("language tag", maxNameLen)
	req.Submethods = r.string("submethods", maxNameLen*4)
}
