package monitor

import (
	"bytes"
	"context"
	"errors"
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

// sign signs an exchange hash for a connection of c. The first hash
// signed for a connection (once: the table makes the connection busy
// meanwhile) becomes its session identifier.
func (m *Monitor) sign(in *call) ([]byte, error) {
	req, err := ipc.ParseSignRequest(in.p)
	if err != nil {
		return nil, err
	}
	if in.stage == stageHanded {
		defer in.conn.turn.enter()() // one at a time (rates.go)
	}
	if err := m.signable(in, req); err != nil {
		m.log.Warn("monitor: signature refused", "proc", in.c.name, "conn", in.conn.id, "err", err)
		return nil, err
	}
	sig, err := m.cfg.HostKeys.SignExchange(req.Alg, req.Pub, req.H)
	if err != nil {
		return nil, err
	}
	if in.stage == stageKex {
		m.mu.Lock()
		in.conn.sessionID, in.conn.hostKey = bytes.Clone(req.H), bytes.Clone(req.Pub)
		m.mu.Unlock()
	}
	return sig, nil
}

// signable checks a signature request: an exchange hash, of a host key
// of this server, and for a pre-auth re-exchange within the limits
// (rates.go; a post-auth one is never refused).
func (m *Monitor) signable(in *call, req *ipc.SignRequest) error {
	// SHA-1 (20 bytes: the legacy *-sha1 key exchanges, when configured),
	// SHA-256, SHA-384 or SHA-512.
	if n := len(req.H); n != 20 && n != 32 && n != 48 && n != 64 {
		return errHashSize
	}
	if !m.isHostKey(req.Alg, req.Pub) {
		return errNoHostKey
	}
	if in.stage != stageAuth && in.stage != stageLogin {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.rates.allowRekey(&in.conn.signs, in.conn.remote, time.Now()) {
		return errRekeyRate
	}
	return nil
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
func (m *Monitor) prove(in *call) ([]byte, error) {
	req, err := ipc.ParseProveRequest(in.p)
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
	sid, made := in.conn.sessionID, in.conn.proofs
	if made < maxProofs {
		in.conn.proofs++
	}
	m.mu.Unlock()
	if made >= maxProofs {
		return nil, errProofs
	}
	return prover.SignHostKeyProof(req.Alg, req.Pub, sid)
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
	conn.user, conn.begun = user, true
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(conn.ctx, decideTimeout)
	defer cancel()
	return login.Begin(ctx, user, service)
}

// beginDecide begins the authentication of a connection with its first
// request, and decides that request (a worker saves a round trip per
// connection): the banner comes back in the decision.
func (m *Monitor) beginDecide(in *call) ([]byte, error) {
	req, err := ipc.ParseDecideRequest(in.p)
	if err != nil {
		return nil, err
	}
	defer secret.WipeString(req.Req.Password) // used once decided
	conn := in.conn
	conn.lmu.Lock()
	defer conn.lmu.Unlock()
	ar := authRequest(req.Req)
	banner, err := m.startLogin(conn, ar.User, ar.Service)
	if err != nil {
		return nil, err
	}
	d, err := m.decideLocked(conn, ar)
	if err != nil {
		return nil, err
	}
	if banner != "" {
		d.Banner = banner + d.Banner
	}
	return marshalDecision(d), nil
}

// decide decides one authentication request of a connection.
func (m *Monitor) decide(in *call) ([]byte, error) {
	req, err := ipc.ParseDecideRequest(in.p)
	if err != nil {
		return nil, err
	}
	defer secret.WipeString(req.Req.Password) // used once decided
	in.conn.lmu.Lock()
	defer in.conn.lmu.Unlock()
	d, err := m.decideLocked(in.conn, authRequest(req.Req))
	if err != nil {
		return nil, err
	}
	return marshalDecision(d), nil
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
func (m *Monitor) respond(in *call) ([]byte, error) {
	req, err := ipc.ParseRespondRequest(in.p)
	if err != nil {
		return nil, err
	}
	defer secret.WipeStrings(req.Responses) // answers may be passwords
	conn := in.conn
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
	return marshalDecision(d), nil
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

// handoff passes an authenticated connection to its post-auth process
// (once: the table makes the connection busy meanwhile): the monitor's
// own copy of the socket, with the state the worker exported once it is
// checked against the monitor's record.
func (m *Monitor) handoff(in *call) ([]byte, error) {
	req, err := ipc.ParseHandoffRequest(in.p)
	if err != nil {
		return nil, err
	}
	var st transport.State
	if err := st.UnmarshalBinary(req.State); err != nil {
		return nil, err
	}
	if !bytes.Equal(st.SessionID, in.conn.sessionID) {
		return nil, errSessionID
	}
	if err := m.adopt(in.conn, req.State); err != nil {
		m.finish(in.conn, ipc.OutcomeClosed, err)
		return nil, err
	}
	return nil, nil
}

// authRequest is a worker's request as auth decides it. The password is
// the same string, not a copy: the caller's clearing covers it.
// The user name is as the client sent it, with its style: the signature
// of a publickey request covers that.
func authRequest(r *ipc.AuthRequest) *auth.Request {
	req := &auth.Request{Service: r.Service, Method: r.Method, Algo: r.Algo, HasSig: r.HasSig,
		KeyBlob: r.KeyBlob, Sig: r.Sig, ChangePassword: r.ChangePassword, Password: r.Password, HostKey: r.HostKey}
	req.SetNameSent(r.User)
	return req
}

// marshalDecision encodes a decision for the worker. The permissions of
// a Success stay with the monitor: the worker learns only the verdict
// (and the banner and prompts it must send).
func marshalDecision(d *auth.Decision) []byte {
	m := &ipc.Decision{Verdict: ipc.Verdict(d.Verdict), Methods: d.Methods, Partial: d.Partial, Reason: d.Reason,
		Message: d.Message, Banner: d.Banner, InvalidUser: d.InvalidUser}
	if d.Err != nil {
		m.Cause = d.Err.Error()
	}
	if d.Info != nil {
		m.Info = &ipc.Challenge{Name: d.Info.Name, Instruction: d.Info.Instruction}
		for _, p := range d.Info.Prompts {
			m.Info.Prompts = append(m.Info.Prompts, ipc.Prompt(p))
		}
	}
	return m.Marshal()
}
