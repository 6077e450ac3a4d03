package monitor

import (
	"errors"
	"fmt"

	"github.com/offload/offload/internal/secret"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/wire"
)

// The monitor's one table of what its children may send it (the package
// documentation, "What it answers", shows it). Dispatch looks a message
// up here and nowhere else: its type, the role of the process that sent
// it and, for one that names a connection, the stage that connection is
// in. A handler that changes a connection's stage checks again under
// the lock that change takes: two requests may pass the table at once.

// role is the kind of process a message comes from.
type role uint8

const (
	roleWorker role = iota // a pre-auth worker (ipc.RolePreauth)
	rolePost               // a post-auth process (ipc.RolePostauth)
	roleKeeper             // a post-auth process's PAM keeper (ipc.RolePAMKeeper)
	numRoles
)

var roleNames = [numRoles]string{ipc.RolePreauth, ipc.RolePostauth, ipc.RolePAMKeeper}

func (r role) String() string { return roleNames[r] }

// roleOf is the role of a child started as ipc role name.
func roleOf(name string) role {
	switch name {
	case ipc.RolePreauth:
		return roleWorker
	case ipc.RolePAMKeeper:
		return roleKeeper
	}
	return rolePost
}

// stage is where a connection is, as the table sees it.
type stage uint8

const (
	stageNone   stage = iota // the message names no connection
	stageKex                 // pre-auth, its first key exchange not yet signed
	stageBusy                // a once-only request for it is being served
	stageAuth                // pre-auth, first exchange signed, authentication not begun
	stageLogin               // pre-auth, authentication begun
	stageOver                // pre-auth, authentication ended by a Disconnect verdict
	stageAuthed              // authenticated, its worker exporting it
	stageHanded              // with its post-auth process
	numStages
)

// stages is a set of stages.
type stages uint16

func of(ss ...stage) stages {
	var s stages
	for _, x := range ss {
		s |= 1 << x
	}
	return s
}

func (s stages) has(x stage) bool { return s&(1<<x) != 0 }

// stage is where c is; m.mu is held.
func (c *mconn) stage() stage {
	switch {
	case c.busy != nil:
		return stageBusy
	case c.authOver:
		return stageOver
	case c.phase == phaseAuthed:
		return stageAuthed
	case c.phase == phaseHanded:
		return stageHanded
	case c.sessionID == nil:
		return stageKex
	case !c.begun:
		return stageAuth
	}
	return stageLogin
}

// entry is what the table says of one message type.
type entry struct {
	// from holds, for each role, the stages of the named connection in
	// which the role may send it: of(stageNone) for a message that
	// names no connection, nothing for a role that may not send it.
	from [numRoles]stages
	// once holds the stages in which it is once-only: the connection is
	// busy (every other request for it refused) while it is served.
	once    stages
	request bool // answered; otherwise a notification
	secret  bool // may carry a password: cleared once served
	// pam says whether a worker's request may wait in PAM (pamwork.go),
	// from the payload after the connection id; nil: never.
	pam   func(*wire.Reader) bool
	serve func(*Monitor, *call) ([]byte, error)
}

// names reports whether the message names a connection (its id leads
// the payload).
func (e *entry) names() bool {
	for _, s := range e.from {
		if s&^of(stageNone) != 0 {
			return true
		}
	}
	return false
}

// wipe clears msg once served if it may carry a password, as OpenSSH
// clears one once used.
func (e *entry) wipe(msg *ipc.Message) {
	if e.secret {
		secret.Wipe(msg.Payload)
	}
}

// table maps each message type a child may send to its entry.
type table map[ipc.Type]*entry

// newTable is the monitor's table.
func newTable() table {
	none := of(stageNone)
	preauth := of(stageKex, stageBusy, stageAuth, stageLogin, stageOver, stageAuthed)
	return table{
		ipc.TypeReady:     {from: [numRoles]stages{none, none, none}, serve: (*Monitor).ready},
		ipc.TypeLog:       {from: [numRoles]stages{none, none, none}, serve: (*Monitor).relay},
		ipc.TypeMetrics:   {from: [numRoles]stages{roleWorker: none, rolePost: none}, serve: (*Monitor).metrics},
		ipc.TypeConnDone:  {from: [numRoles]stages{roleWorker: preauth, rolePost: of(stageHanded)}, serve: (*Monitor).connDone},
		ipc.TypeAEADClose: {from: [numRoles]stages{rolePost: none}, serve: (*Monitor).aeadClose},
		ipc.TypeSign: {request: true, once: of(stageKex), serve: (*Monitor).sign,
			from: [numRoles]stages{roleWorker: of(stageKex, stageAuth, stageLogin), rolePost: of(stageHanded)}},
		ipc.TypeProve: {request: true, serve: (*Monitor).prove,
			from: [numRoles]stages{roleWorker: of(stageAuth, stageLogin, stageAuthed), rolePost: of(stageHanded)}},
		ipc.TypeBeginDecide: {request: true, secret: true, pam: byMethod, serve: (*Monitor).beginDecide,
			from: [numRoles]stages{roleWorker: of(stageAuth)}},
		ipc.TypeDecide: {request: true, secret: true, pam: byMethod, serve: (*Monitor).decide,
			from: [numRoles]stages{roleWorker: of(stageLogin)}},
		ipc.TypeRespond: {request: true, secret: true, pam: always, serve: (*Monitor).respond,
			from: [numRoles]stages{roleWorker: of(stageLogin)}},
		ipc.TypeHandoff: {request: true, once: of(stageAuthed), serve: (*Monitor).handoff,
			from: [numRoles]stages{roleWorker: of(stageAuthed)}},
		ipc.TypeLoginRecord: {request: true, serve: (*Monitor).loginRecord, from: [numRoles]stages{rolePost: of(stageHanded)}},
		ipc.TypeAEADNew:     {request: true, serve: (*Monitor).aeadNew, from: [numRoles]stages{rolePost: none}},
		ipc.TypeAEADSeal:    {request: true, serve: (*Monitor).aeadCall, from: [numRoles]stages{rolePost: none}},
		ipc.TypeAEADOpen:    {request: true, serve: (*Monitor).aeadCall, from: [numRoles]stages{rolePost: none}},
		ipc.TypeAEADOrigin:  {serve: (*Monitor).aeadOrigin, from: [numRoles]stages{rolePost: of(stageHanded)}},
	}
}

// call is a message the table admitted.
type call struct {
	c     *child
	role  role
	t     ipc.Type
	conn  *mconn // the connection it names; nil for none
	stage stage  // conn's stage when it was admitted
	p     []byte
}

// A refusal is the table's no to a message: the role may not send it,
// or the connection it names is not the sender's or not in a stage
// where it may.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// admit checks msg, of entry e, from c's process of role r against the
// table. A once-only request makes the connection busy until release.
func (m *Monitor) admit(c *child, r role, e *entry, msg *ipc.Message) (*call, error) {
	if e.from[r] == 0 {
		return nil, &refusal{fmt.Errorf("monitor: %v is not for a %v process", msg.Type, r)}
	}
	in := &call{c: c, role: r, t: msg.Type, p: msg.Payload}
	if !e.names() {
		return in, nil
	}
	rd := wire.NewReader(msg.Payload)
	id := rd.Uint64("conn id")
	if err := rd.Err(); err != nil {
		return nil, &ipc.ProtocolError{Type: msg.Type, Err: err}
	}
	if err := m.admitFor(in, e, id); err != nil {
		return nil, err
	}
	return in, nil
}

// admitFor checks that connection id is the sender's and in a stage
// where e.from allows the request in.
func (m *Monitor) admitFor(in *call, e *entry, id uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	conn := m.conns[id]
	if conn == nil || conn.owner != in.c {
		return &refusal{errNotYours}
	}
	in.conn, in.stage = conn, conn.stage()
	switch {
	case e.from[in.role].has(in.stage):
	case in.stage == stageOver:
		return &refusal{errAuthOver}
	default:
		return &refusal{errWrongPhase}
	}
	if e.once.has(in.stage) {
		conn.busy = in
	}
	return nil
}

// release ends the once-only request in (if it was one, and the
// connection is still busy with it).
func (m *Monitor) release(in *call) {
	if in.conn == nil {
		return
	}
	m.mu.Lock()
	if in.conn.busy == in {
		in.conn.busy = nil
	}
	m.mu.Unlock()
}

// serve answers request msg of c if the table admits it. Refusals are
// logged: a child that follows the protocol meets one only when its
// connection has just ended or an earlier request for it failed.
func (m *Monitor) serve(c *child, e *entry, msg *ipc.Message) ([]byte, error) {
	defer e.wipe(msg)
	in, err := m.admit(c, roleOf(c.role), e, msg)
	if err != nil {
		m.log.Warn("monitor: request refused", "proc", c.name, "request", msg.Type.String(), "err", err)
		return nil, err
	}
	if e.once != 0 {
		defer m.release(in)
	}
	return e.serve(m, in)
}

// notified takes notification msg of c: one the table refuses is
// dropped (a connection's end may cross the monitor's own), one that is
// malformed breaks the protocol.
func (c *child) notified(e *entry, msg *ipc.Message) {
	in, err := c.m.admit(c, roleOf(c.role), e, msg)
	var no *refusal
	if errors.As(err, &no) {
		return
	}
	if err == nil {
		_, err = e.serve(c.m, in)
	}
	if err != nil {
		c.violation(err)
	}
}

// byMethod: a decision may wait in PAM for a password or
// keyboard-interactive request.
func byMethod(r *wire.Reader) bool {
	r.Bytes("user")
	r.Bytes("service")
	method := string(r.Bytes("method"))
	return method == "password" || method == "keyboard-interactive"
}

// always: keyboard-interactive responses may wait in PAM.
func always(*wire.Reader) bool { return true }
