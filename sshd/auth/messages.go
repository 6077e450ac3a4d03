package auth

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/offload/offload/sshd/wire"
)

// Bounds on fields of SSH_MSG_USERAUTH_REQUEST.
const (
	maxUserLen     = 256
	maxNameLen     = 64 // service, method and algorithm names
	maxKeyBlobLen  = 16 << 10
	maxSigLen      = 16 << 10
	maxPasswordLen = 1 << 10
)

// Service names (RFC 4252 §1).
const (
	serviceUserAuth   = "ssh-userauth"
	serviceConnection = "ssh-connection"
)

// Request is SSH_MSG_USERAUTH_REQUEST (RFC 4252 §5, §7, §8).
// Method-specific fields are set for "publickey", "password" and
// "keyboard-interactive" only.
type Request struct {
	User, Service, Method string
	// Style is what followed a colon in the user name ("alice:style"),
	// OpenSSH's BSD-auth style: kept for the signed data, used for
	// nothing else, as by OpenSSH's sshd on systems without BSD auth.
	Style  string
	styled bool // the name had a colon (an empty style too)

	HasSig  bool   // publickey
	Algo    string // publickey
	KeyBlob []byte // publickey, aliases the payload
	Sig     []byte // publickey with HasSig, aliases the payload
	// HostKey is the server host key a publickey-hostbound-v00@openssh.com
	// request names (and its signature covers); aliases the payload.
	HostKey []byte

	ChangePassword bool   // password: a change request (unsupported)
	Password       string // password; never logged

	Submethods string // keyboard-interactive: the client's hint
}

// parseUserAuthRequest decodes a USERAUTH_REQUEST payload. Byte fields
// alias p.
func parseUserAuthRequest(p []byte) (*Request, error) {
	r := newReader(p)
	if n := r.Byte("message number"); r.Err() == nil && n != wire.MsgUserAuthRequest {
		return nil, &ParseError{"userauth request", fmt.Errorf("message number %d", n)}
	}
	req := &Request{
		User:    r.string("user name", maxUserLen),
		Service: r.string("service name", maxNameLen),
		Method:  r.string("method name", maxNameLen),
	}
	req.SetNameSent(req.User)
	switch req.Method {
	case "publickey":
		req.parsePublicKey(r)
	case methodHostBound:
		req.parseHostBound(r)
	case "password":
		req.parsePassword(r)
	case "keyboard-interactive":
		req.parseKbdInt(r)
	case "none":
	default:
		r.Rest() // other methods' fields are not looked at
	}
	if err := r.done(); err != nil {
		return nil, &ParseError{"userauth request", err}
	}
	return req, nil
}

func (req *Request) parsePublicKey(r *reader) {
	req.HasSig = r.Bool("has signature")
	req.Algo = r.string("public key algorithm", maxNameLen)
	req.KeyBlob = r.bytes("public key blob", maxKeyBlobLen)
	if req.HasSig {
		req.Sig = r.bytes("signature", maxSigLen)
	}
}

func (req *Request) parsePassword(r *reader) {
	req.ChangePassword = r.Bool("change password")
	req.Password = r.string("password", maxPasswordLen)
	if req.ChangePassword {
		r.string("new password", maxPasswordLen)
	}
}

var errTooLong = errors.New("too long")

// reader is a wire.Reader that also bounds field lengths.
type reader struct {
	*wire.Reader
	err error // first over-long field
}

func newReader(p []byte) *reader { return &reader{Reader: wire.NewReader(p)} }

func (r *reader) bytes(field string, max int) []byte {
	b := r.Bytes(field)
	if len(b) > max {
		if r.err == nil {
			r.err = &wire.FieldError{Field: field, Err: fmt.Errorf("%w: %d bytes, at most %d", errTooLong, len(b), max)}
		}
		return nil
	}
	return b
}

func (r *reader) string(field string, max int) string { return string(r.bytes(field, max)) }

// done reports the first problem: an over-long field, a short message or
// trailing bytes.
func (r *reader) done() error {
	if r.err != nil {
		return r.err
	}
	return r.Done()
}

// validUserName reports whether name is acceptable as an account name:
// non-empty, bounded, valid UTF-8 without control characters, '/' or ':'.
func validUserName(name string) bool {
	if name == "" || len(name) > maxUserLen || !utf8.ValidString(name) {
		return false
	}
	for _, c := range name {
		if unicode.IsControl(c) || c == '/' || c == ':' {
			return false
		}
	}
	return name[0] != '-' && name != "." && name != ".."
}

// parseServiceRequest decodes SSH_MSG_SERVICE_REQUEST.
func parseServiceRequest(p []byte) (string, error) {
	r := newReader(p)
	r.Byte("message number")
	name := r.string("service name", maxNameLen)
	if err := r.done(); err != nil {
		return "", &ParseError{"service request", err}
	}
	return name, nil
}

func appendServiceAccept(b []byte, name string) []byte {
	b = append(b, wire.MsgServiceAccept)
	return wire.AppendString(b, name)
}

// appendFailure encodes SSH_MSG_USERAUTH_FAILURE.
func appendFailure(b []byte, methods []string, partial bool) []byte {
	b = append(b, wire.MsgUserAuthFailure)
	b = wire.AppendNameList(b, methods)
	return wire.AppendBool(b, partial)
}

func appendSuccess(b []byte) []byte { return append(b, wire.MsgUserAuthSuccess) }

// appendBanner encodes SSH_MSG_USERAUTH_BANNER with an empty language tag.
func appendBanner(b []byte, text string) []byte {
	b = append(b, wire.MsgUserAuthBanner)
	b = wire.AppendString(b, text)
	return wire.AppendString(b, "")
}

// appendPKOK encodes SSH_MSG_USERAUTH_PK_OK.
func appendPKOK(b []byte, algo string, blob []byte) []byte {
	b = append(b, wire.MsgUserAuthPKOK)
	b = wire.AppendString(b, algo)
	return wire.AppendBytes(b, blob)
}

// NameSent is the user name as the client sent it, style included: what
// a publickey signature covers.
func (req *Request) NameSent() string {
	if !req.styled {
		return req.User
	}
	return req.User + ":" + req.Style
}

// SetNameSent sets User and Style from a user name as a client sends it
// ("alice:style"); a process that passes a request on passes NameSent.
func (req *Request) SetNameSent(name string) {
	req.User, req.Style, req.styled = name, "", false
	if u, style, ok := strings.Cut(name, ":"); ok {
		req.User, req.Style, req.styled = u, style, true
	}
}

// signedData is what a publickey signature covers (RFC 4252 §7); for
// publickey-hostbound-v00@openssh.com the method name is its own and the
// server host key follows the key.

func signedData(sessionID []byte, req *Request) []byte {
	b := make([]byte, 0, 128+len(sessionID)+len(req.User)+len(req.KeyBlob)+len(req.HostKey))
	b = wire.AppendBytes(b, sessionID)
	b = append(b, wire.MsgUserAuthRequest)
	b = wire.AppendString(b, req.NameSent())
	b = wire.AppendString(b, req.Service)
	if req.Method != methodHostBound {
		b = wire.AppendString(b, methodPublicKey)
		b = wire.AppendBool(b, true)
		b = wire.AppendString(b, req.Algo)
		return wire.AppendBytes(b, req.KeyBlob)
	}
	b = wire.AppendString(b, methodHostBound)
	b = wire.AppendBool(b, true)
	b = wire.AppendString(b, req.Algo)
	b = wire.AppendBytes(b, req.KeyBlob)
	return wire.AppendBytes(b, req.HostKey)
}

// signature is the wire form of a signature: format, blob and, for
// security-key algorithms, flags and counter in Rest.
type signature struct {
	Format string
	Blob   []byte
	Rest   []byte

	sk    bool    // a security-key signature, verified with its flags
	flags skFlags // when sk
}

func parseSignature(b []byte) (*signature, error) {
	r := newReader(b)
	s := &signature{Format: r.string("signature format", maxNameLen), Blob: r.Bytes("signature blob")}
	s.Rest = r.Rest()
	if err := r.done(); err != nil {
		return nil, &ParseError{"signature", err}
	}
	return s, nil
}
