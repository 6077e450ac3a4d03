package transport

import (
	"errors"
	"fmt"

	"github.com/offload/offload/sshd/wire"
)

// DisconnectError ends a connection: Reason is the SSH_MSG_DISCONNECT
// reason code. When FromPeer is false the transport found the problem and
// sent the disconnect; when true the peer sent it.
type DisconnectError struct {
	Reason   uint32
	Message  string
	FromPeer bool
	Err      error
	// Text, when set, is sent instead of SSH_MSG_DISCONNECT as a line of
	// text (CR LF added): the answer to an identification line that is
	// none, whose sender speaks no binary packets.
	Text string
}

func (e *DisconnectError) Error() string {
	who := "local"
	if e.FromPeer {
		who = "peer"
	}
	s := fmt.Sprintf("transport: disconnect (%s, %s): %s", who, ReasonString(e.Reason), e.Message)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *DisconnectError) Unwrap() error { return e.Err }

// ErrMAC is wrapped by errors for packets that fail authentication.
var ErrMAC = errors.New("transport: message authentication failed")

// ErrClosed is returned after the connection has been closed.
var ErrClosed = errors.New("transport: connection closed")

func protocolError(format string, args ...any) *DisconnectError {
	return &DisconnectError{Reason: wire.DisconnectProtocolError, Message: fmt.Sprintf(format, args...)}
}

func kexError(err error, format string, args ...any) *DisconnectError {
	return &DisconnectError{Reason: wire.DisconnectKeyExchangeFailed, Message: fmt.Sprintf(format, args...), Err: err}
}

var reasonNames = map[uint32]string{
	wire.DisconnectHostNotAllowedToConnect:     "host not allowed to connect",
	wire.DisconnectProtocolError:               "protocol error",
	wire.DisconnectKeyExchangeFailed:           "key exchange failed",
	wire.DisconnectReserved:                    "reserved",
	wire.DisconnectMACError:                    "MAC error",
	wire.DisconnectCompressionError:            "compression error",
	wire.DisconnectServiceNotAvailable:         "service not available",
	wire.DisconnectProtocolVersionNotSupported: "protocol version not supported",
	wire.DisconnectHostKeyNotVerifiable:        "host key not verifiable",
	wire.DisconnectConnectionLost:              "connection lost",
	wire.DisconnectByApplication:               "by application",
	wire.DisconnectTooManyConnections:          "too many connections",
	wire.DisconnectAuthCancelledByUser:         "auth cancelled by user",
	wire.DisconnectNoMoreAuthMethodsAvailable:  "no more auth methods available",
	wire.DisconnectIllegalUserName:             "illegal user name",
}

// ReasonString names a disconnect reason code.
func ReasonString(r uint32) string {
	if s, ok := reasonNames[r]; ok {
		return s
	}
	return fmt.Sprintf("reason %d", r)
}
