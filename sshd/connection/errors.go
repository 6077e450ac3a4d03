package connection

import (
	"errors"
	"fmt"

	"github.com/offload/offload/sshd/wire"
)

// ProtocolError is returned by Serve when the peer broke the protocol. It
// carries the SSH disconnect reason code sent to the peer.
type ProtocolError struct {
	Reason  uint32 // wire.Disconnect* code
	Channel int64  // local channel id concerned, or -1
	Msg     string
	Err     error // underlying cause, if any
}

func (e *ProtocolError) Error() string {
	s := "connection: protocol error: " + e.Msg
	if e.Channel >= 0 {
		s = fmt.Sprintf("connection: protocol error on channel %d: %s", e.Channel, e.Msg)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ProtocolError) Unwrap() error { return e.Err }

// protoErr makes a protocol-error ProtocolError.
func protoErr(ch int64, err error, format string, args ...any) *ProtocolError {
	return &ProtocolError{Reason: wire.DisconnectProtocolError, Channel: ch, Msg: fmt.Sprintf(format, args...), Err: err}
}

// ErrClosed is returned by channel reads and writes after the channel closed.
var ErrClosed = errors.New("connection: channel closed")

// RequestError describes a refused channel or session request, for logs.
type RequestError struct {
	Request string
	Reason  string
}

func (e *RequestError) Error() string {
	return "connection: " + e.Request + " refused: " + e.Reason
}

func refuse(req, format string, args ...any) *RequestError {
	return &RequestError{Request: req, Reason: fmt.Sprintf(format, args...)}
}
