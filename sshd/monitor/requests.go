package monitor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offload/offload/internal/secret"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/transport"
)

// Refusals of requests.
var (
	errNotYours   = errors.New("monitor: no such connection for this process")
	errWrongPhase = errors.New("monitor: request out of order for this connection")
	errConnEnded  = errors.New("monitor: the connection has ended")
	errNoHostKey  = errors.New("monitor: not a host key of this server")
	errHashSize   = errors.New("monitor: not the size of an exchange hash")
	errRekeyRate  = errors.New("monitor: too many key re-exchanges")
	errSessionID  = errors.New("monitor: state is not this connection's session")
	errAuthOver   = errors.New("monitor: the connection's authentication has ended")
)

// decideTimeout bounds one authentication decision (a keys command, PAM).
const decideTimeout = 2 * time.Minute

// serve answers one request of child c.
func (m *Monitor) serve(c *child, msg *ipc.Message) ([]byte, error) {
	if !allowed(c.role, msg.Type) {
		return nil, fmt.Errorf("monitor: %v is not for a %s process", msg.Type, c.role)
	}
	switch msg.Type {
	case ipc.TypeSign:
		return m.sign(c, msg.Payload)
	case ipc.TypeAEADNew:
		return c.aeads.New(msg.Payload)
	case ipc.TypeAEADSeal, ipc.TypeAEADOpen:
		return c.aeads.Call(msg.Type, msg.Payload)
	case ipc.TypeLoginRecord:
		return m.loginRecord(c, msg.Payload)
	case ipc.TypeProve:
		return m.prove(c, msg.Payload)
	case ipc.TypeBegin:
		return m.begin(c, msg.Payload)
	case ipc.TypeDecide:
		return m.decide(c, msg.Payload)
	case ipc.TypeBeginDecide:
		return m.beginDecide(c, msg.Payload)
	case ipc.TypeRespond:
		return m.respond(c, msg.Payload)
	}
	return m.handoff(c, msg.Payload)
}

// allowed says which requests each kind of child may make: a pre-auth
// worker neither holds authenticated connections nor uses the monitor's
// AEADs (it would be a free encryption service for a compromised worker);
// a post-auth process neither authenticates nor hands over.
func allowed(role string, t ipc.Type) bool {
	switch t {
	case ipc.TypeSign, ipc.TypeProve:
		return true
	case ipc.TypeBegin, ipc.TypeDecide, ipc.TypeBeginDecide, ipc.TypeRespond, ipc.TypeHandoff:
		return role == ipc.RolePreauth
	}
	return role == ipc.RolePostauth
}

// sign signs an exchange hash for a connection of c. The first hash
// signed for a connection becomes its session identifier.
func (m *Monitor) sign(c *child, p []byte) ([]byte, error) {
	req, err := ipc.ParseSignRequest(p)
	if err != nil {
		return nil, err
	}
	defer m.signTurn(c, req.ConnID)()
	conn, first, err := m.signable(c, req)
	if err != nil {
		m.log.Warn("monitor: signature refused", "proc", c.name, "conn", req.ConnID, "err", err)
		return nil, err
	}
	sig, err := m.cfg.HostKeys.SignExchange(req.Alg, req.Pub, req.H)
	if first {
		m.mu.Lock()
		conn.signing = false
		if err == nil {
			conn.sessionID, conn.hostKey = bytes.Clone(req.H), bytes.Clone(req.Pub)
		}
		m.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	return sig, nil
}

// signable checks a signature request against the connection's record
// and the limits; first is set for the connection's first exchange, of
// which there is one: while its signature is being made, every other
// request for the connection is refused.
func (m *Monitor) signable(c *child, req *ipc.SignRequest) (*mconn, bool, error) {
	// SHA-1 (20 bytes: the legacy *-sha1 key exchanges, when configured),
	// SHA-256, SHA-384 or SHA-512.
	if n := len(req.H); n != 20 && n != 32 && n != 48 && n != 64 {
		return nil, false, errHashSize
	}
	if !m.isHostKey(req.Alg, req.Pub) {
		return nil, false, errNoHostKey
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	conn := m.conns[req.ConnID]
	switch {
	case conn == nil || conn.owner != c:
		return nil, false, errNotYours
	case conn.authOver:
		return nil, false, errAuthOver
	case conn.phase == phaseAuthed || conn.phase == phaseDone || conn.signing:
		return nil, false, errWrongPhase
	case conn.sessionID == nil:
		conn.signing = true // the first exchange
		return conn, true, nil
	case conn.phase == phaseHanded:
		return conn, false, nil // never refused: see rates.go
	}
	if !m.rates.allowRekey(&conn.signs, conn.remote, time.Now()) {
		return nil, false, errRekeyRate
	}
	return conn, false, nil
}

func (m *Monitor) isHostKey(alg string, pub []byte) bool {
	for _, k := range m.cfg.HostPublicKeys {
		if bytes.Equal(k.Marshal(), pub) {
			return transport.HostKeyAlgorithmFits(alg, k)
		}
	}
	return false
}

// maxProofs bounds the hostkeys-prove signatures of one connection (a
// client asks once, for the keys it did not know).
const maxProofs = 16

var errProofs = errors.New("monitor: too many host-key proofs")

// prove makes a hostkeys-prove-00@openssh.com signature for a connection
// of c over the session id the monitor recorded for it.
func (m *Monitor) prove(c *child, p []byte) ([]byte, error) {
	req, err := ipc.ParseProveRequest(p)
	if err != nil {
		return nil, err
	}
	prover, ok := m.cfg.HostKeys.(transport.HostKeyProver)
	if !ok {
		return nil, transport.ErrNoProver
	}
	if !m.isHostKey(req.Alg, req.Pub) {
		return nil, errNoHostKey
	}
	m.mu.Lock()
	conn := m.conns[req.ConnID]
	var sid []byte
	switch {
	case conn == nil || conn.owner != c || conn.sessionID == nil:
		err = errNotYours
	case conn.authOver:
		err = errAuthOver
	case conn.proofs >= maxProofs:
		err = errProofs
	default:
		conn.proofs++
		sid = conn.sessionID
	}
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return prover.SignHostKeyProof(req.Alg, req.Pub, sid)
}

// preauthConn returns the connection of worker c, in pre-auth, with its
// first key exchange done.
func (m *Monitor) preauthConn(c *child, id uint64) (*mconn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	conn := m.conns[id]
	switch {
	case conn == nil || conn.owner != c:
		return nil, errNotYours
	case conn.authOver:
		return nil, errAuthOver
	case conn.phase != phasePreauth || conn.sessionID == nil:
		return nil, errWrongPhase
	}
	return conn, nil
}

// begin starts the authentication of a connection.
func (m *Monitor) begin(c *child, p []byte) ([]byte, error) {
	req, err := ipc.ParseBeginRequest(p)
	if err != nil {
		return nil, err
	}
	conn, err := m.preauthConn(c, req.ConnID)
	if err != nil {
		return nil, err
	}
	conn.lmu.Lock()
	defer conn.lmu.Unlock()
	banner, err := m.startLogin(conn, req.User, req.Service)
	if err != nil {
		return nil, err
	}
	return (&ipc.BeginReply{Banner: banner}).Marshal(), nil
}

// startLogin makes the connection's login and begins it for user; conn.lmu
// must be held.
func (m *Monitor) startLogin(conn *mconn, user, service string) (string, error) {
	if conn.login != nil || conn.loginDone {
		return "", errWrongPhase
	}
	login, err := m.cfg.NewLogin(conn.sessionID, conn.hostKey, conn.local, conn.remote)
	if err != nil {
		return "", err
	}
	conn.login = login
	m.mu.Lock()
	conn.user = user
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(conn.ctx, decideTimeout)
	defer cancel()
	return login.Begin(ctx, user, service)
}

// beginDecide is begin and decide for the first request in one exchange
// (a worker saves a round trip per connection): the banner comes back in
// the decision.
func (m *Monitor) beginDecide(c *child, p []byte) ([]byte, error) {
	req, err := ipc.ParseDecideRequest(p)
	if err != nil {
		return nil, err
	}
	defer secret.WipeString(req.Req.Password) // used once decided
	conn, err := m.preauthConn(c, req.ConnID)
	if err != nil {
		return nil, err
	}
	conn.lmu.Lock()
	defer conn.lmu.Unlock()
	banner, err := m.startLogin(conn, req.Req.User, req.Req.Service)
	if err != nil {
		return nil, err
	}
	d, err := m.decideLocked(conn, req.Req)
	if err != nil {
		return nil, err
	}
	if banner != "" {
		d.Banner = banner + d.Banner
	}
	return ipc.MarshalDecision(d), nil
}

// decide decides one authentication request of a connection.
func (m *Monitor) decide(c *child, p []byte) ([]byte, error) {
	req, err := ipc.ParseDecideRequest(p)
	if err != nil {
		return nil, err
	}
	defer secret.WipeString(req.Req.Password) // used once decided
	conn, err := m.preauthConn(c, req.ConnID)
	if err != nil {
		return nil, err
	}
	conn.lmu.Lock()
	defer conn.lmu.Unlock()
	d, err := m.decideLocked(conn, req.Req)
	if err != nil {
		return nil, err
	}
	return ipc.MarshalDecision(d), nil
}

// decideLocked decides req in the connection's login; conn.lmu must be
// held.
func (m *Monitor) decideLocked(conn *mconn, req *auth.Request) (*auth.Decision, error) {
	if conn.login == nil || conn.loginDone {
		return nil, errWrongPhase
	}
	if m.authEnded(conn) { // by a decision this one waited for
		return nil, errAuthOver
	}
	ctx, cancel := context.WithTimeout(conn.ctx, decideTimeout)
	defer cancel()
	d, err := conn.login.Decide(ctx, req)
	if err != nil {
		return nil, err
	}
	m.verdict(conn, d)
	return d, nil
}

// authEnded reports whether the connection's authentication ended with
// a Disconnect, or the login was granted (conn.lmu held).
func (m *Monitor) authEnded(conn *mconn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return conn.authOver || conn.phase != phasePreauth
}

// verdict records what a decision means for the connection: a Success
// grants the login, a Disconnect ends its authentication for good (a
// worker that carries on regardless gets nothing more for it).
func (m *Monitor) verdict(conn *mconn, d *auth.Decision) {
	switch d.Verdict {
	case auth.Success:
		m.granted(conn, d)
	case auth.Disconnect:
		m.mu.Lock()
		conn.authOver = true
		m.mu.Unlock()
	}
}

// respond passes keyboard-interactive responses to the connection's
// Authority (auth.Responder), which checks that a round is pending and
// that their number is that of the prompts it sent.
func (m *Monitor) respond(c *child, p []byte) ([]byte, error) {
	req, err := ipc.ParseRespondRequest(p)
	if err != nil {
		return nil, err
	}
	defer secret.WipeStrings(req.Responses) // answers may be passwords
	conn, err := m.preauthConn(c, req.ConnID)
	if err != nil {
		return nil, err
	}
	conn.lmu.Lock()
	defer conn.lmu.Unlock()
	r, ok := conn.login.(auth.Responder)
	if conn.login == nil || conn.loginDone || !ok {
		return nil, errWrongPhase
	}
	if m.authEnded(conn) {
		return nil, errAuthOver
	}
	ctx, cancel := context.WithTimeout(conn.ctx, decideTimeout)
	defer cancel()
	d, err := r.Respond(ctx, req.Responses)
	if err != nil {
		return nil, err
	}
	m.verdict(conn, d)
	return ipc.MarshalDecision(d), nil
}

// granted records a login: from now on the connection waits for its
// hand-over and may not be signed for or decided about.
func (m *Monitor) granted(conn *mconn, d *auth.Decision) {
	settings := conn.login.Settings()
	m.mu.Lock()
	defer m.mu.Unlock()
	conn.perms, conn.settings, conn.phase = d.Perms, settings, phaseAuthed
	conn.user = d.Perms.User
	m.log.Info("monitor: authenticated", "conn", conn.id, "user", conn.user, "method", d.Perms.Method,
		"key", d.Perms.KeyFingerprint, "remote", conn.remote.String())
}

// handoff passes an authenticated connection to its post-auth process:
// the monitor's own copy of the socket, with the state the worker
// exported once it is checked against the monitor's record.
func (m *Monitor) handoff(c *child, p []byte) ([]byte, error) {
	req, err := ipc.ParseHandoffRequest(p)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	conn := m.conns[req.ConnID]
	ok := conn != nil && conn.owner == c && conn.phase == phaseAuthed
	m.mu.Unlock()
	if !ok {
		return nil, errWrongPhase
	}
	var st transport.State
	if err := st.UnmarshalBinary(req.State); err != nil {
		return nil, err
	}
	if !bytes.Equal(st.SessionID, conn.sessionID) {
		return nil, errSessionID
	}
	if err := m.adopt(conn, req.State); err != nil {
		m.finish(conn, ipc.OutcomeClosed, err)
		return nil, err
	}
	return nil, nil
}
