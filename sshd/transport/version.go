package transport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"

	"github.com/offload/offload/sshd/wire"
)

// Limits of the version exchange (RFC 4253 §4.2): a line is at most 255
// bytes including CR LF.
const (
	maxVersionLine = 255
)

// DefaultVersion is the identification string the server sends.
const DefaultVersion = "SSH-2.0-offload_0.1"

// readVersion reads the client's identification line. A client may not
// send lines before it (only a server may), so the first line must be the
// version. The result excludes CR LF.
func readVersion(r *bufio.Reader) ([]byte, error) {
	line := make([]byte, 0, 64)
	for {
		b, err := r.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("transport: reading version: %w", err)
		}
		if b == '\n' {
			break
		}
		if len(line) >= maxVersionLine-1 {
			return nil, &DisconnectError{Reason: wire.DisconnectProtocolVersionNotSupported, Message: "identification line too long", Text: invalidIdent}
		}
		line = append(line, b)
	}
	line = bytes.TrimSuffix(line, []byte{'\r'})
	return line, checkVersion(line)
}

// invalidIdent is the line of text a client whose identification line is
// not one gets (a server cannot send binary packets to a peer that has
// not begun the protocol): the words OpenSSH's sshd sends, which its
// clients and scripts (the regress suite's multiplex test) look for.
const invalidIdent = "Invalid SSH identification string."

func checkVersion(line []byte) error {
	if !bytes.HasPrefix(line, []byte("SSH-")) {
		return &DisconnectError{Reason: wire.DisconnectProtocolVersionNotSupported, Message: "not an SSH identification line", Text: invalidIdent}
	}
	if !bytes.HasPrefix(line, []byte("SSH-2.0-")) && !bytes.HasPrefix(line, []byte("SSH-1.99-")) {
		return &DisconnectError{Reason: wire.DisconnectProtocolVersionNotSupported, Message: "protocol version not supported", Text: "Protocol version not supported: this server speaks SSH-2.0 only."}
	}
	for _, c := range line {
		if c < 0x20 || c > 0x7e {
			return &DisconnectError{Reason: wire.DisconnectProtocolError, Message: "control character in identification line"}
		}
	}
	return nil
}

// versionLine returns the server's identification line with CR LF.
func versionLine(v string) ([]byte, error) {
	if err := checkVersion([]byte(v)); err != nil || !bytes.HasPrefix([]byte(v), []byte("SSH-2.0-")) {
		return nil, errors.New("transport: server version must be printable and start with SSH-2.0-")
	}
	if len(v)+2 > maxVersionLine {
		return nil, errors.New("transport: server version too long")
	}
	return append([]byte(v), '\r', '\n'), nil
}
