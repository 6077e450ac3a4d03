package ipc

import (
	"fmt"
	"syscall"
	"time"

	"github.com/offload/offload/internal/rawio"
	"github.com/offload/offload/sshd/wire"
)

// SignTimeout bounds a request to the monitor that may wait on a token or
// a slow decision: a host-key signature, an AEAD's creation or call, a
// hand-over (a token may be slow, a monitor may be gone).
const SignTimeout = 30 * time.Second

// Type is a message type.
type Type uint8

// Message types. The monitor trusts nothing that comes from a child: each
// message of the child-to-monitor direction has a bounded, hand-written
// decoder with a fuzz target.
const (
	// Monitor to child.
	TypeConfig    Type = 1 // ChildConfig: the child's plan and settings; first message
	TypeNewConn   Type = 2 // NewConn and the socket: a connection for a pre-auth worker
	TypeCloseConn Type = 3 // CloseConn: end one connection
	TypeAdopt     Type = 4 // Adopt and the socket: an authenticated connection for post-auth

	// Child to monitor (17, once a Begin of its own, is not reused).
	TypeSign        Type = 16 // SignRequest; the reply is an SSH signature blob
	TypeDecide      Type = 18 // DecideRequest; the reply is a Decision
	TypeHandoff     Type = 19 // HandoffRequest; the reply is empty
	TypeConnDone    Type = 20 // ConnDone notification
	TypeLog         Type = 21 // Log notification
	TypeReady       Type = 22 // the child is configured and sandboxed (empty)
	TypeMetrics     Type = 23 // Metrics notification: provider counts since the last
	TypeAEADNew     Type = 24 // AEADNew; the reply is an AEADCreated
	TypeAEADSeal    Type = 25 // AEADCall; the reply is the sealed bytes
	TypeAEADOpen    Type = 26 // AEADCall; the reply is the opened bytes
	TypeAEADClose   Type = 27 // AEADHandle notification
	TypeRespond     Type = 28 // RespondRequest (keyboard-interactive responses); the reply is a Decision
	TypeLoginRecord Type = 29 // LoginRecordRequest; the reply to a login is a LastLogin
	TypeProve       Type = 30 // ProveRequest; the reply is an SSH signature blob
	TypeBeginDecide Type = 31 // DecideRequest of the first request: Begin, then Decide; the reply is a Decision (with the banner)
	TypeAEADOrigin  Type = 34 // AEADOrigin notification

	// An in-process server and its PAM keeper (pamkeeper.go).
	TypePAMSessionOpened Type = 32 // PAMSessionOpened notification, keeper to server
	TypeSpawn            Type = 33 // Spawn and the program's stdin, stdout, stderr; the reply is a SpawnReply

	// TypeReply answers a request (status, then payload or error text).
	TypeReply Type = 0x7f
)

var typeNames = map[Type]string{
	TypeConfig: "config", TypeNewConn: "new-conn", TypeCloseConn: "close-conn", TypeAdopt: "adopt",
	TypeSign: "sign", TypeDecide: "decide", TypeHandoff: "handoff",
	TypeConnDone: "conn-done", TypeLog: "log", TypeReady: "ready", TypeMetrics: "metrics", TypeAEADNew: "aead-new", TypeAEADSeal: "aead-seal",
	TypeAEADOpen: "aead-open", TypeAEADClose: "aead-close", TypeRespond: "respond", TypeLoginRecord: "login-record", TypeProve: "prove", TypeBeginDecide: "begin-decide", TypeReply: "reply",
	TypePAMSessionOpened: "session-opened", TypeSpawn: "spawn", TypeAEADOrigin: "aead-origin",
}

func (t Type) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type-%d", uint8(t))
}

// Field bounds.
const (
	maxName     = 64   // algorithm, method, service names
	maxUser     = 256  // as sshd/auth bounds user names
	maxAddr     = 128  // "host:port"
	maxText     = 1024 // reasons, messages, banners are bounded elsewhere
	maxBanner   = 64 << 10
	maxKeyBlob  = 16 << 10
	maxSig      = 16 << 10
	maxHash     = 64
	maxSecret   = 1 << 10 // passwords
	maxList     = 32      // entries of a name list
	maxState    = MaxMessage - 64
	maxSettings = MaxMessage - 1024
)

// decoder is a wire.Reader that also bounds each field.
type decoder struct {
	*wire.Reader
	err error
}

func newDecoder(p []byte) *decoder { return &decoder{Reader: wire.NewReader(p)} }

func (d *decoder) bytes(field string, max int) []byte {
	b := d.view(field, max)
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// view is the next field, bounded, in the message itself (not copied).
func (d *decoder) view(field string, max int) []byte {
	b := d.Bytes(field)
	if len(b) > max && d.err == nil {
		d.err = &wire.FieldError{Field: field, Err: fmt.Errorf("%d bytes, at most %d", len(b), max)}
	}
	if d.err != nil || d.Err() != nil {
		return nil
	}
	return b
}

// string copies the field once, into the string: a password has no
// other copy to clear than the message and the string.
func (d *decoder) string(field string, max int) string { return string(d.view(field, max)) }

// boolean reads a boolean that must be encoded as 0 or 1: from a less
// privileged process, anything else is malformed.
func (d *decoder) boolean(field string) bool {
	b := d.Byte(field)
	if b > 1 && d.err == nil {
		d.err = &wire.FieldError{Field: field, Err: fmt.Errorf("boolean %d, want 0 or 1", b)}
	}
	return b == 1
}

func (d *decoder) list(field string) []string {
	n := d.Uint32(field + " count")
	if n > maxList && d.err == nil {
		d.err = &wire.FieldError{Field: field, Err: fmt.Errorf("%d entries, at most %d", n, maxList)}
	}
	var out []string
	for i := uint32(0); i < n && d.err == nil && d.Err() == nil; i++ {
		out = append(out, d.string(field, maxName))
	}
	return out
}

func (d *decoder) done(t Type) error {
	if err := d.end(); err != nil {
		return &ProtocolError{Type: t, Err: err}
	}
	return nil
}

// end is the first error, or one for bytes left over.
func (d *decoder) end() error {
	if d.err != nil {
		return d.err
	}
	return d.Done()
}

func appendList(b []byte, l []string) []byte {
	b = wire.AppendUint32(b, uint32(len(l)))
	for _, s := range l {
		b = wire.AppendString(b, s)
	}
	return b
}

// NewConn gives a pre-auth worker a connection (its socket comes with it).
type NewConn struct {
	ConnID        uint64
	Local, Remote string // "ip:port"
}

// Marshal encodes m.
func (m *NewConn) Marshal() []byte {
	b := wire.AppendUint64(nil, m.ConnID)
	b = wire.AppendString(b, m.Local)
	return wire.AppendString(b, m.Remote)
}

// ParseNewConn decodes a NewConn.
func ParseNewConn(p []byte) (*NewConn, error) {
	d := newDecoder(p)
	m := &NewConn{ConnID: d.Uint64("conn id"), Local: d.string("local", maxAddr), Remote: d.string("remote", maxAddr)}
	return m, d.done(TypeNewConn)
}

// CloseConn tells a child to end a connection.
type CloseConn struct {
	ConnID uint64
	Reason string
}

// Marshal encodes m.
func (m *CloseConn) Marshal() []byte {
	return wire.AppendString(wire.AppendUint64(nil, m.ConnID), m.Reason)
}

// ParseCloseConn decodes a CloseConn.
func ParseCloseConn(p []byte) (*CloseConn, error) {
	d := newDecoder(p)
	m := &CloseConn{ConnID: d.Uint64("conn id"), Reason: d.string("reason", maxText)}
	return m, d.done(TypeCloseConn)
}

// SignRequest asks the monitor to sign an exchange hash with a host key.
type SignRequest struct {
	ConnID uint64
	Alg    string // host-key signature algorithm
	Pub    []byte // the host key, SSH wire format
	H      []byte // the exchange hash
}

// Marshal encodes m.
func (m *SignRequest) Marshal() []byte {
	b := wire.AppendUint64(nil, m.ConnID)
	b = wire.AppendString(b, m.Alg)
	b = wire.AppendBytes(b, m.Pub)
	return wire.AppendBytes(b, m.H)
}

// ParseSignRequest decodes a SignRequest.
func ParseSignRequest(p []byte) (*SignRequest, error) {
	d := newDecoder(p)
	m := &SignRequest{ConnID: d.Uint64("conn id"), Alg: d.string("algorithm", maxName),
		Pub: d.bytes("public key", maxKeyBlob), H: d.bytes("hash", maxHash)}
	return m, d.done(TypeSign)
}

// The authentication messages are in auth.go.

// HandoffRequest asks the monitor to pass an authenticated connection to
// its post-auth process, with the transport state the worker exported.
type HandoffRequest struct {
	ConnID uint64
	State  []byte // transport.State, marshaled
}

// Marshal encodes m.
func (m *HandoffRequest) Marshal() []byte {
	return wire.AppendBytes(wire.AppendUint64(nil, m.ConnID), m.State)
}

// ParseHandoffRequest decodes a HandoffRequest (the state is checked when
// it is decoded as a transport.State).
func ParseHandoffRequest(p []byte) (*HandoffRequest, error) {
	d := newDecoder(p)
	m := &HandoffRequest{ConnID: d.Uint64("conn id"), State: d.bytes("state", maxState)}
	return m, d.done(TypeHandoff)
}

// Outcome classifies how a connection ended, for penalties and logs.
type Outcome uint8

var outcomeNames = [...]string{"closed", "noauth", "authfail", "grace-exceeded", "protocol", "handed-over", "crash", "worker-lost"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome-%d", uint8(o))
}

// Outcomes.
const (
	OutcomeClosed     Outcome = iota // ended normally, or by the client
	OutcomeNoAuth                    // closed before authenticating
	OutcomeAuthFail                  // disconnected after failed authentication
	OutcomeGrace                     // LoginGraceTime exceeded
	OutcomeProtocol                  // the client broke the protocol
	OutcomeHandedOver                // authenticated and handed to post-auth
	OutcomeCrash                     // the process serving it died, and the monitor holds the connection's input the cause
	maxOutcome        = OutcomeCrash

	// OutcomeLost is the monitor's own: the pre-auth worker serving the
	// connection died and nothing shows that the connection caused it.
	// A child never reports it (ParseConnDone refuses it).
	OutcomeLost = maxOutcome + 1
)

// ConnDone tells the monitor a connection has ended in the child.
type ConnDone struct {
	ConnID            uint64
	Outcome           Outcome
	Err               string // what ended it, for logs
	BytesIn, BytesOut uint64 // on the wire, as the kernel counted them
}

// Marshal encodes m.
func (m *ConnDone) Marshal() []byte {
	b := wire.AppendUint64(nil, m.ConnID)
	b = append(b, byte(m.Outcome))
	b = wire.AppendString(b, m.Err)
	b = wire.AppendUint64(b, m.BytesIn)
	return wire.AppendUint64(b, m.BytesOut)
}

// NewConnDone is the ConnDone of a connection ending with err, with the
// byte counts of its socket sock (none when sock is nil or not TCP).
func NewConnDone(id uint64, sock syscall.Conn, out Outcome, err error) *ConnDone {
	m := &ConnDone{ConnID: id, Outcome: out}
	if err != nil {
		m.Err = err.Error()
		if len(m.Err) > maxText {
			m.Err = m.Err[:maxText]
		}
	}
	if sock != nil {
		m.BytesIn, m.BytesOut, _ = rawio.TCPBytes(sock)
	}
	return m
}

// ParseConnDone decodes a ConnDone.
func ParseConnDone(p []byte) (*ConnDone, error) {
	d := newDecoder(p)
	m := &ConnDone{ConnID: d.Uint64("conn id"), Outcome: Outcome(d.Byte("outcome")), Err: d.string("error", maxText)}
	m.BytesIn, m.BytesOut = d.Uint64("bytes in"), d.Uint64("bytes out")
	if err := d.done(TypeConnDone); err != nil {
		return nil, err
	}
	if m.Outcome > maxOutcome {
		return nil, &ProtocolError{Type: TypeConnDone, Err: fmt.Errorf("outcome %d", m.Outcome)}
	}
	return m, nil
}

// Adopt gives a post-auth process an authenticated connection (its
// socket comes with it). Perms, Settings and State are binary encodings
// of the packages that own them (each bounded, refusing trailing bytes,
// fuzzed there): ipc carries them as they are.
type Adopt struct {
	ConnID        uint64
	Local, Remote string
	Perms         []byte // perm.Permissions, MarshalBinary
	Settings      []byte // the connection's settings: connection.Config, MarshalBinary
	State         []byte // transport.State, marshaled
	LogLevel      int8   // slog.Level of the connection's lines (LogLevel, per Match)
}

// Marshal encodes m.
func (m *Adopt) Marshal() []byte {
	b := wire.AppendUint64(nil, m.ConnID)
	b = wire.AppendString(b, m.Local)
	b = wire.AppendString(b, m.Remote)
	b = wire.AppendBytes(b, m.Perms)
	b = wire.AppendBytes(b, m.Settings)
	b = wire.AppendBytes(b, m.State)
	return append(b, byte(m.LogLevel))
}

// ParseAdopt decodes an Adopt.
func ParseAdopt(p []byte) (*Adopt, error) {
	d := newDecoder(p)
	m := &Adopt{ConnID: d.Uint64("conn id"), Local: d.string("local", maxAddr), Remote: d.string("remote", maxAddr)}
	m.Perms, m.Settings = d.bytes("perms", maxSettings), d.bytes("settings", maxSettings)
	m.State = d.bytes("state", maxState)
	m.LogLevel = int8(d.Byte("log level"))
	return m, d.done(TypeAdopt)
}

// Log is in log.go.

// LoginRecordRequest asks the monitor to write the login records (utmp,
// wtmp, lastlog) of a pty session of one of the child's connections, or
// (Logout) to close them; the reply to a login is a LastLogin. The
// monitor takes the user and the client's address from its own record of
// the connection, and checks the terminal belongs to the user.
type LoginRecordRequest struct {
	ConnID uint64
	Logout bool
	TTY    string // "/dev/pts/N"
	PID    int32  // the session leader
}

// Marshal encodes m.
func (m *LoginRecordRequest) Marshal() []byte {
	b := wire.AppendUint64(nil, m.ConnID)
	b = wire.AppendBool(b, m.Logout)
	b = wire.AppendString(b, m.TTY)
	return wire.AppendUint32(b, uint32(m.PID))
}

// ParseLoginRecordRequest decodes a LoginRecordRequest.
func ParseLoginRecordRequest(p []byte) (*LoginRecordRequest, error) {
	d := newDecoder(p)
	m := &LoginRecordRequest{ConnID: d.Uint64("conn id"), Logout: d.boolean("logout"), TTY: d.string("tty", maxName)}
	m.PID = int32(d.Uint32("pid"))
	return m, d.done(TypeLoginRecord)
}

// LastLogin is the user's previous login, for PrintLastLog.
type LastLogin struct {
	Unix      int64 // seconds; 0 for none
	Host, TTY string
}

// Marshal encodes m.
func (m *LastLogin) Marshal() []byte {
	b := wire.AppendUint64(nil, uint64(m.Unix))
	b = wire.AppendString(b, m.Host)
	return wire.AppendString(b, m.TTY)
}

// ParseLastLogin decodes a LastLogin.
func ParseLastLogin(p []byte) (*LastLogin, error) {
	d := newDecoder(p)
	m := &LastLogin{Unix: int64(d.Uint64("time")), Host: d.string("host", maxAddr), TTY: d.string("tty", maxName)}
	return m, d.done(TypeLoginRecord)
}

// ProveRequest asks the monitor for a hostkeys-prove-00@openssh.com
// signature with host key Pub over a connection's session: the monitor
// builds the signed data itself, from its own record of the session id.
type ProveRequest struct {
	ConnID uint64
	Alg    string
	Pub    []byte
}

// Marshal encodes m.
func (m *ProveRequest) Marshal() []byte {
	b := wire.AppendUint64(nil, m.ConnID)
	b = wire.AppendString(b, m.Alg)
	return wire.AppendBytes(b, m.Pub)
}

// ParseProveRequest decodes a ProveRequest.
func ParseProveRequest(p []byte) (*ProveRequest, error) {
	d := newDecoder(p)
	m := &ProveRequest{ConnID: d.Uint64("conn id"), Alg: d.string("algorithm", maxName), Pub: d.bytes("public key", maxKeyBlob)}
	return m, d.done(TypeProve)
}
