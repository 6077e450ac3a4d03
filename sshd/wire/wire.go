// Package wire encodes and decodes the SSH data types of RFC 4251 §5 and
// names the message numbers, for every layer of offload's SSH server.
//
// # Decoding
//
// A Reader walks a message, bounds-checking every read. The first
// malformed field makes it sticky-failed: later reads return zero values
// and Err reports the first problem, so a parser reads all fields and
// checks once. Nothing here panics on hostile input.
//
// # Encoding
//
// The Append functions append to a caller's buffer, so a hot path reuses
// one buffer and does not allocate.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// Message numbers (RFC 4250 §4.1 and OpenSSH PROTOCOL).
const (
	MsgDisconnect     = 1
	MsgIgnore         = 2
	MsgUnimplemented  = 3
	MsgDebug          = 4
	MsgServiceRequest = 5
	MsgServiceAccept  = 6
	MsgExtInfo        = 7
	MsgKexInit        = 20
	MsgNewKeys        = 21
	MsgKexECDHInit    = 30
	MsgKexECDHReply   = 31

	MsgUserAuthRequest = 50
	MsgUserAuthFailure = 51
	MsgUserAuthSuccess = 52
	MsgUserAuthBanner  = 53
	MsgUserAuthPKOK    = 60

	MsgGlobalRequest  = 80
	MsgRequestSuccess = 81
	MsgRequestFailure = 82

	MsgChannelOpen         = 90
	MsgChannelOpenConfirm  = 91
	MsgChannelOpenFailure  = 92
	MsgChannelWindowAdjust = 93
	MsgChannelData         = 94
	MsgChannelExtendedData = 95
	MsgChannelEOF          = 96
	MsgChannelClose        = 97
	MsgChannelRequest      = 98
	MsgChannelSuccess      = 99
	MsgChannelFailure      = 100
)

// Disconnect reason codes (RFC 4253 §11.1).
const (
	DisconnectHostNotAllowedToConnect     = 1
	DisconnectProtocolError               = 2
	DisconnectKeyExchangeFailed           = 3
	DisconnectReserved                    = 4
	DisconnectMACError                    = 5
	DisconnectCompressionError            = 6
	DisconnectServiceNotAvailable         = 7
	DisconnectProtocolVersionNotSupported = 8
	DisconnectHostKeyNotVerifiable        = 9
	DisconnectConnectionLost              = 10
	DisconnectByApplication               = 11
	DisconnectTooManyConnections          = 12
	DisconnectAuthCancelledByUser         = 13
	DisconnectNoMoreAuthMethodsAvailable  = 14
	DisconnectIllegalUserName             = 15
)

// ErrShort is wrapped by errors for messages that end early.
var ErrShort = errors.New("wire: message too short")

// FieldError says which field of a message was malformed.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return fmt.Sprintf("wire: field %s: %v", e.Field, e.Err) }
func (e *FieldError) Unwrap() error { return e.Err }

// Reader decodes SSH data types from a byte slice. Byte slices it returns
// alias the input.
type Reader struct {
	b   []byte
	err error
}

// NewReader returns a Reader over b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err returns the first decoding error.
func (r *Reader) Err() error { return r.err }

// Len returns the number of unread bytes.
func (r *Reader) Len() int { return len(r.b) }

// Rest returns the unread bytes and consumes them.
func (r *Reader) Rest() []byte {
	b := r.b
	r.b = nil
	return b
}

// Done reports an error when decoding failed or bytes are left over.
func (r *Reader) Done() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("wire: %d unexpected trailing bytes", len(r.b))
	}
	return r.err
}

func (r *Reader) fail(field string, err error) {
	if r.err == nil {
		r.err = &FieldError{Field: field, Err: err}
	}
	r.b = nil
}

// Byte reads one byte.
func (r *Reader) Byte(field string) byte {
	if r.err != nil || len(r.b) < 1 {
		r.fail(field, ErrShort)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// Bool reads a boolean (any non-zero byte is true).
func (r *Reader) Bool(field string) bool { return r.Byte(field) != 0 }

// Uint32 reads a big-endian uint32.
func (r *Reader) Uint32(field string) uint32 {
	if r.err != nil || len(r.b) < 4 {
		r.fail(field, ErrShort)
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

// Uint64 reads a big-endian uint64.
func (r *Reader) Uint64(field string) uint64 {
	if r.err != nil || len(r.b) < 8 {
		r.fail(field, ErrShort)
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// Fixed reads exactly n raw bytes.
func (r *Reader) Fixed(field string, n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		r.fail(field, ErrShort)
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// Bytes reads a length-prefixed string as bytes.
func (r *Reader) Bytes(field string) []byte {
	n := r.Uint32(field)
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)) {
		r.fail(field, fmt.Errorf("length %d exceeds the %d bytes left: %w", n, len(r.b), ErrShort))
		return nil
	}
	return r.Fixed(field, int(n))
}

// String reads a length-prefixed string.
func (r *Reader) String(field string) string { return string(r.Bytes(field)) }

// NameList reads a comma-separated name-list. Empty names are rejected.
func (r *Reader) NameList(field string) []string {
	b := r.Bytes(field)
	if r.err != nil || len(b) == 0 {
		return nil
	}
	names := strings.Split(string(b), ",")
	for _, n := range names {
		if n == "" {
			r.fail(field, errors.New("empty name in name-list"))
			return nil
		}
	}
	return names
}

// MPInt reads a multiple-precision integer; negative values are rejected.
func (r *Reader) MPInt(field string) *big.Int {
	b := r.Bytes(field)
	if r.err != nil {
		return nil
	}
	if len(b) > 0 && b[0]&0x80 != 0 {
		r.fail(field, errors.New("negative mpint"))
		return nil
	}
	return new(big.Int).SetBytes(b)
}

// AppendByte appends one byte.
func AppendByte(b []byte, v byte) []byte { return append(b, v) }

// AppendBool appends a boolean.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendUint32 appends a big-endian uint32.
func AppendUint32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

// AppendUint64 appends a big-endian uint64.
func AppendUint64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

// AppendBytes appends a length-prefixed string.
func AppendBytes(b, v []byte) []byte {
	b = AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// AppendString appends a length-prefixed string.
func AppendString(b []byte, v string) []byte {
	b = AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// AppendNameList appends a comma-separated name-list.
func AppendNameList(b []byte, names []string) []byte {
	n := 0
	for i, s := range names {
		if i > 0 {
			n++
		}
		n += len(s)
	}
	b = AppendUint32(b, uint32(n))
	for i, s := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, s...)
	}
	return b
}

// AppendMPInt appends a non-negative big-endian magnitude (as produced by
// big.Int.Bytes or a key agreement) as an mpint: leading zeros stripped,
// and a zero byte added when the top bit is set.
func AppendMPInt(b, magnitude []byte) []byte {
	for len(magnitude) > 0 && magnitude[0] == 0 {
		magnitude = magnitude[1:]
	}
	if len(magnitude) > 0 && magnitude[0]&0x80 != 0 {
		b = AppendUint32(b, uint32(len(magnitude)+1))
		b = append(b, 0)
		return append(b, magnitude...)
	}
	return AppendBytes(b, magnitude)
}
