package sshd

import (
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"sync/atomic"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/login"
	"github.com/offload/offload/sshd/loginrec"
	"github.com/offload/offload/sshd/monitor"
	"github.com/offload/offload/sshd/penalty"
	"github.com/offload/offload/sshd/plan"
	"github.com/offload/offload/sshd/postauth"
	"github.com/offload/offload/sshd/preauth"
	"github.com/offload/offload/sshd/sandbox"
	"github.com/offload/offload/sshd/transport"
)

// Separation configures the separated process model (privilege
// separation); the zero value is useful. Executable must call RunChild
// first thing in main; OnConnEnd gets every connection that ends.
type Separation = monitor.Processes

// ConnEnd describes a connection of a separated server that has ended.
type ConnEnd = monitor.ConnEnd

// childRunner records that this program calls RunChild, so that it may
// be started again as a child (the in-process mode's PAM keeper).
var childRunner atomic.Bool

// RunChild runs this process as a child of a separated Server when the
// Server started it as one, and then exits; otherwise it returns at once.
// A program whose Server uses Separation calls it first thing in main,
// before anything else is set up: the child re-executes the program.
func RunChild() {
	childRunner.Store(true)
	switch role := os.Getenv(ipc.RoleEnv); role {
	case ipc.RolePreauth:
		sandbox.SetName("sshd-preauth")
		os.Exit(preauth.Main())
	case ipc.RolePostauth:
		sandbox.SetName("sshd-user")
		sandbox.HangupDefault()
		os.Exit(postauth.Main())
	case ipc.RolePAMKeeper, ipc.RoleLegacyPAMKeeper:
		sandbox.SetName("sshd-pam")
		sandbox.HangupDefault()
		os.Exit(postauth.PAMKeeperMain())
	}
}

// newMonitor starts the monitor of a separated server: the host keys stay
// in this process, the children get the public keys and the plan pl the
// in-process transport server resolved.
func (s *Server) newMonitor(st *settings, pl *plan.Plan) (*monitor.Monitor, error) {
	signer, pubs, err := transport.NewHostKeySigner(st.HostKeys, nil)
	if err != nil {
		return nil, fmt.Errorf("sshd: %w", err)
	}
	s.plan = separatedPlan(st, pl, signer, pubs)
	procs := *st.Separation
	procs.OnConnEnd = s.connEnded
	return monitor.New(monitor.Config{
		Processes: procs,
		HostKeys:  signer, HostPublicKeys: pubs, Plan: *s.plan,
		LoginGraceTime: st.LoginGraceTime, MaxRequests: auth.MaxRequests(st.Auth),
		NewLogin: func(sessionID, hostKey []byte, local, remote net.Addr) (monitor.Login, error) {
			return login.New(st.logins, sessionID, hostKey, local, remote), nil
		},
		Logger: st.log, Metrics: st.Registry.Metrics(), Registry: st.Registry,
		LoginRecords: loginRecorder(st),
	})
}

// separatedPlan completes pl for the children: where each host key lives,
// and each primitive's provider from the registry.
func separatedPlan(st *settings, pl *plan.Plan, signer transport.HostKeySigner, pubs []ssh.PublicKey) *plan.Plan {
	res := plan.Resolve(st.Registry)
	if len(res.Away) > 0 {
		st.log.Warn("sshd: the monitor's choice of provider for these primitives is a token, which the pre-auth and post-auth processes cannot reach: they compute them with the software and CPU providers",
			"primitives", res.Away)
	}
	out := *pl
	out.Mode = st.Registry.Policy().Mode.String()
	out.HostKeyProvenance = hostKeyProvenance(signer, pubs)
	out.Apply(res)
	return &out
}

// connEnded applies the penalties for an ended connection and reports it
// to Separation.OnConnEnd.
func (s *Server) connEnded(e monitor.ConnEnd) {
	o := penalty.Outcome{Authenticated: e.Auth.Authenticated, Attempted: e.Auth.Attempted,
		InvalidUser: e.Auth.InvalidUser, Refused: e.Auth.Refused, GraceExceeded: e.Outcome == ipc.OutcomeGrace,
		Crashed: e.Outcome == ipc.OutcomeCrash, Lost: e.Outcome == ipc.OutcomeLost}
	s.cfg.Penalties.PenalizeOutcome(e.Remote, o)
	if f := s.cfg.Separation.OnConnEnd; f != nil {
		f(e)
	}
}

// hostKeyProvenance says, for the children's log lines, where each host
// key lives.
func hostKeyProvenance(s transport.HostKeySigner, pubs []ssh.PublicKey) map[string]string {
	hp, ok := s.(transport.HostKeyProvenancer)
	if !ok {
		return nil
	}
	m := map[string]string{}
	for _, p := range pubs {
		m[hex.EncodeToString(p.Marshal())] = hp.HostKeyProvenance(p.Marshal())
	}
	return m
}

// serveSeparated hands nc to the monitor and waits for the connection to
// end, holding a MaxStartups slot until it is authenticated.
func (s *Server) serveSeparated(nc net.Conn) {
	release, ok := s.admitConn(nc, s.log.With("remote", nc.RemoteAddr().String()))
	if !ok {
		nc.Close()
		return
	}
	done, err := s.mon.Admit(nc, release)
	if err != nil {
		release()
		s.log.Warn("sshd: connection not admitted", "remote", nc.RemoteAddr().String(), "err", err)
		return
	}
	<-done
}

// separable reports whether nc is a socket the monitor can pass on; a
// connection over pipes (inetd mode with a ProxyCommand) is served in
// this process.
func separable(nc net.Conn) bool {
	_, ok := nc.(interface{ File() (*os.File, error) })
	return ok
}

// loginRecorder is the monitor's writer of login records, nil when they
// are off.
func loginRecorder(st *settings) monitor.LoginRecorder {
	if !st.recordsOn() {
		return nil
	}
	return loginrec.Files{}
}

func marshalCerts(certs []*ssh.Certificate) [][]byte {
	var out [][]byte
	for _, c := range certs {
		out = append(out, c.Marshal())
	}
	return out
}
