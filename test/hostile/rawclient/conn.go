package rawclient

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/offload/offload/sshd/wire"
)

// MaxPacket bounds the packets the client accepts from the server.
const MaxPacket = 1 << 20

// DefaultVersion is the identification line Handshake sends.
const DefaultVersion = "SSH-2.0-offload_rawclient"

// Conn is one client connection. It is not safe for concurrent use.
type Conn struct {
	NC net.Conn
	br *bufio.Reader

	ClientVersion, ServerVersion string
	// SessionID is the exchange hash of the first key exchange.
	SessionID []byte
	// ServerKexInit is the server's last KEXINIT payload.
	ServerKexInit []byte
	// Strict reports whether both sides announced strict kex.
	Strict bool
	// KexCount counts completed key exchanges.
	KexCount int

	r, w       packetCipher
	rseq, wseq uint32
	kex        *kexState
}

// Dial connects to addr over TCP with a 5-second timeout.
func Dial(addr string) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return New(nc), nil
}

// New wraps an established connection.
func New(nc net.Conn) *Conn {
	return &Conn{NC: nc, br: bufio.NewReaderSize(nc, 64<<10), r: noneCipher{}, w: noneCipher{}}
}

// Close closes the connection.
func (c *Conn) Close() error { return c.NC.Close() }

// SetDeadline sets the deadline of the underlying connection.
func (c *Conn) SetDeadline(t time.Time) error { return c.NC.SetDeadline(t) }

// WriteRaw writes b to the connection as is.
func (c *Conn) WriteRaw(b []byte) error {
	_, err := c.NC.Write(b)
	return err
}

// ExchangeVersions sends the identification line v (CR LF is added) and
// reads the server's.
func (c *Conn) ExchangeVersions(v string) error {
	c.ClientVersion = v
	if err := c.WriteRaw([]byte(v + "\r\n")); err != nil {
		return err
	}
	line, err := c.ReadServerVersion()
	if err != nil {
		return err
	}
	c.ServerVersion = line
	return nil
}

// ReadServerVersion reads lines until one starts with "SSH-" and returns
// it without CR LF.
func (c *Conn) ReadServerVersion() (string, error) {
	for range 16 {
		line, err := c.br.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("rawclient: reading server version: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(line, "SSH-") {
			return line, nil
		}
	}
	return "", errors.New("rawclient: no SSH- line from the server")
}

// ReadLine reads a line of text (without CR LF): what a server sends
// instead of packets to a peer whose identification line is none.
func (c *Conn) ReadLine() (string, error) {
	line, err := c.br.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// Padding returns a valid padding length for a payload of n bytes under
// the current write cipher.
func (c *Conn) Padding(n int) int {
	a := c.w.blockLen()
	l := 1 + n
	if c.w.lengthAligned() {
		l += 4
	}
	pad := a - l%a
	if pad < 4 {
		pad += a
	}
	return pad
}

// Packet builds the cleartext packet (length, padding length, payload,
// random padding) for payload with pad bytes of padding.
func Packet(payload []byte, pad int) []byte {
	p := binary.BigEndian.AppendUint32(nil, uint32(1+len(payload)+pad))
	p = append(p, byte(pad))
	p = append(p, payload...)
	padding := make([]byte, pad)
	rand.Read(padding)
	return append(p, padding...)
}

// Seal encrypts a cleartext packet built by the caller (whatever its
// length and padding fields say) under the current write keys and
// advances the sequence number.
func (c *Conn) Seal(pkt []byte) []byte {
	out := c.w.seal(c.wseq, pkt)
	c.wseq++
	return out
}

// WritePacket sends payload in a well-formed packet.
func (c *Conn) WritePacket(payload []byte) error {
	return c.WriteRaw(c.Seal(Packet(payload, c.Padding(len(payload)))))
}

// ReadPacket returns the next payload, transport messages included.
func (c *Conn) ReadPacket() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return nil, err
	}
	n := c.r.length(c.rseq, hdr[:])
	if n < 5 || n > MaxPacket {
		return nil, fmt.Errorf("rawclient: server sent packet length %d", n)
	}
	pkt := make([]byte, 4+int(n)+c.r.tagLen())
	copy(pkt, hdr[:])
	if _, err := io.ReadFull(c.br, pkt[4:]); err != nil {
		return nil, err
	}
	body, err := c.r.open(c.rseq, pkt)
	if err != nil {
		return nil, err
	}
	c.rseq++
	pad := int(body[0])
	if 1+pad >= len(body) {
		return nil, fmt.Errorf("rawclient: server sent padding %d in %d bytes", pad, len(body))
	}
	p := body[1 : len(body)-pad]
	if p[0] == wire.MsgNewKeys {
		c.switchRead()
	}
	return p, nil
}

// DisconnectError is an SSH_MSG_DISCONNECT from the server.
type DisconnectError struct {
	Reason  uint32
	Message string
}

func (e *DisconnectError) Error() string {
	return fmt.Sprintf("rawclient: server disconnected (reason %d): %s", e.Reason, e.Message)
}

func parseDisconnect(p []byte) *DisconnectError {
	r := wire.NewReader(p[1:])
	return &DisconnectError{Reason: r.Uint32("reason"), Message: r.String("message")}
}

// Next returns the next message that is not IGNORE, DEBUG, UNIMPLEMENTED
// or EXT_INFO. It answers global requests that want a reply with
// REQUEST_FAILURE, and turns DISCONNECT into a *DisconnectError.
func (c *Conn) Next() ([]byte, error) {
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return nil, err
		}
		switch p[0] {
		case wire.MsgIgnore, wire.MsgDebug, wire.MsgUnimplemented, wire.MsgExtInfo:
			continue
		case wire.MsgDisconnect:
			return nil, parseDisconnect(p)
		case wire.MsgGlobalRequest:
			if err := c.refuseGlobal(p); err != nil {
				return nil, err
			}
			continue
		}
		return p, nil
	}
}

func (c *Conn) refuseGlobal(p []byte) error {
	r := wire.NewReader(p[1:])
	r.String("name")
	if r.Bool("want reply") {
		return c.WritePacket([]byte{wire.MsgRequestFailure})
	}
	return nil
}

// Expect returns the next message (as Next) and fails unless it is of
// type want.
func (c *Conn) Expect(want byte) ([]byte, error) {
	p, err := c.Next()
	if err != nil {
		return nil, err
	}
	if p[0] != want {
		return nil, fmt.Errorf("rawclient: got message %d, want %d", p[0], want)
	}
	return p, nil
}

// ReadDisconnect reads until the server disconnects. It returns the
// server's DISCONNECT, or nil and the read error when the connection
// ended without one (a timeout included). Packets before it are dropped.
func (c *Conn) ReadDisconnect(timeout time.Duration) (*DisconnectError, error) {
	c.NC.SetReadDeadline(time.Now().Add(timeout))
	defer c.NC.SetReadDeadline(time.Time{})
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return nil, err
		}
		if p[0] == wire.MsgDisconnect {
			return parseDisconnect(p), nil
		}
	}
}

// WaitClosed reads and discards bytes until the server closes the
// connection (nil) or timeout passes (an error).
func (c *Conn) WaitClosed(timeout time.Duration) error {
	c.NC.SetReadDeadline(time.Now().Add(timeout))
	defer c.NC.SetReadDeadline(time.Time{})
	_, err := io.Copy(io.Discard, c.NC)
	if err == nil || errors.Is(err, net.ErrClosed) || isReset(err) {
		return nil
	}
	return err
}

func isReset(err error) bool {
	return strings.Contains(err.Error(), "connection reset")
}
