package ipc

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/offload/offload/sshd/wire"
)

// ChildConfig is the first message the monitor sends a child (TypeConfig):
// the plan it constructs its transport from, and its role's settings.
type ChildConfig struct {
	// Plan is the encoded plan (sshd/plan) the child builds its transport
	// and registry from; empty for a PAM keeper.
	Plan     []byte
	LogLevel slog.Level
	// Pre-auth workers.
	LoginGraceTime time.Duration // bound on the handshake and authentication (resolved by the monitor: positive, or negative for none)
	MaxRequests    int           // bound on userauth requests (auth.ServeOptions)
	// Post-auth processes.
	User string // the account the process serves
	// Metrics makes the child count provider operations and send them
	// (TypeMetrics) to the monitor.
	Metrics bool
	// Identity, when set, is who the child becomes before it reads
	// anything else: the monitor starts its children as itself (so that
	// a program only root may execute can run them) and each drops its
	// privileges first thing.
	Identity *Identity
	// LoginRecords says the monitor writes login records for the
	// post-auth process's pty sessions.
	LoginRecords bool
	// PAM, for a PAM keeper (RolePAMKeeper), is the PAM session to
	// open before it starts the post-auth process.
	PAM *PAMSession
	// Chroot, for a post-auth process, is the ChrootDirectory it confines
	// itself to (checked by the monitor and again by the process) before
	// it drops its privileges.
	Chroot string
}

// PAMSession selects the PAM session of a user's post-auth process.
type PAMSession struct {
	Service, ConfDir string
	RemoteHost       string // the first connection's client address (PAM_RHOST)
	// Spawn, for an in-process server's keeper, starts the connection's
	// session programs on TypeSpawn requests instead of a post-auth
	// process.
	Spawn bool
}

// Identity is who a child runs as: sandbox.Identity field for field
// (sshd/remote.Become drops to it).
type Identity struct {
	Uid, Gid uint32
	Groups   []uint32
}

// maxGroups bounds the supplementary groups of an Identity.
const maxGroups = 1024

// Marshal encodes c.
func (c *ChildConfig) Marshal() ([]byte, error) {
	b := wire.AppendBytes(nil, c.Plan)
	b = wire.AppendUint64(b, uint64(int64(c.LogLevel)))
	b = wire.AppendUint64(b, uint64(c.LoginGraceTime))
	b = wire.AppendUint32(b, uint32(c.MaxRequests))
	b = wire.AppendString(b, c.User)
	b = wire.AppendBool(wire.AppendBool(b, c.Metrics), c.LoginRecords)
	b = appendIdentity(b, c.Identity)
	b = appendPAM(b, c.PAM)
	b = wire.AppendString(b, c.Chroot)
	if len(b) > MaxMessage {
		return nil, ErrTooLarge
	}
	return b, nil
}

func appendIdentity(b []byte, id *Identity) []byte {
	if id == nil {
		return wire.AppendBool(b, false)
	}
	b = wire.AppendUint32(wire.AppendUint32(wire.AppendBool(b, true), id.Uid), id.Gid)
	return appendGroups(b, id.Groups)
}

func appendGroups(b []byte, groups []uint32) []byte {
	b = wire.AppendUint32(b, uint32(len(groups)))
	for _, g := range groups {
		b = wire.AppendUint32(b, g)
	}
	return b
}

func appendPAM(b []byte, p *PAMSession) []byte {
	if p == nil {
		return wire.AppendBool(b, false)
	}
	b = wire.AppendString(wire.AppendString(wire.AppendBool(b, true), p.Service), p.ConfDir)
	return wire.AppendBool(wire.AppendString(b, p.RemoteHost), p.Spawn)
}

// ParseChildConfig decodes a ChildConfig.
func ParseChildConfig(p []byte) (*ChildConfig, error) {
	d := newDecoder(p)
	c := &ChildConfig{Plan: d.bytes("plan", maxState)}
	c.LogLevel = slog.Level(int64(d.Uint64("log level")))
	c.LoginGraceTime = time.Duration(int64(d.Uint64("login grace time")))
	c.MaxRequests = int(int32(d.Uint32("max requests")))
	c.User = d.string("user", maxUser)
	c.Metrics, c.LoginRecords = d.boolean("metrics"), d.boolean("login records")
	c.Identity = d.identity()
	c.PAM = d.pam()
	c.Chroot = d.string("chroot", maxText)
	return c, d.done(TypeConfig)
}

func (d *decoder) identity() *Identity {
	if !d.boolean("identity") {
		return nil
	}
	return &Identity{Uid: d.Uint32("uid"), Gid: d.Uint32("gid"), Groups: d.groups()}
}

// groups reads a list of group ids; none is an empty list, not nil.
func (d *decoder) groups() []uint32 {
	out := []uint32{}
	n := d.Uint32("groups")
	if n > maxGroups && d.err == nil {
		d.err = &wire.FieldError{Field: "groups", Err: fmt.Errorf("%d groups, at most %d", n, maxGroups)}
	}
	for i := uint32(0); i < n && d.err == nil && d.Err() == nil; i++ {
		out = append(out, d.Uint32("group"))
	}
	return out
}

func (d *decoder) pam() *PAMSession {
	if !d.boolean("pam") {
		return nil
	}
	return &PAMSession{Service: d.string("pam service", maxName), ConfDir: d.string("pam conf dir", maxText),
		RemoteHost: d.string("pam remote host", maxText), Spawn: d.boolean("pam spawn")}
}
