package ipc

import (
	"fmt"

	"github.com/offload/offload/sshd/wire"
)

// Messages between an in-process server (no privilege separation) and the
// PAM keeper it starts for a connection: the keeper opens the PAM
// session, says so with a PAMSessionOpened, then starts each of the
// connection's session programs on a Spawn request, so that they inherit
// what the session set on the keeper (limits, audit login uid, cgroup,
// keyring) and the server's process keeps none of it.

// Bounds of a PAMSessionOpened.
const (
	maxSessionEnv     = 256      // variables of the PAM environment
	maxSessionEnvLen  = 32 << 10 // one NAME=value
	maxSessionMessage = 32 << 10 // the session modules' texts
)

// PAMSessionOpened tells the server the PAM session is open, with what the
// session modules gave the user's processes.
type PAMSessionOpened struct {
	Env      []string // NAME=value from pam_getenvlist, sorted
	Umask    int32    // the mask a module (pam_umask) set; -1 for none
	Messages string   // texts the modules showed (pam_motd)
}

// Marshal encodes m.
func (m *PAMSessionOpened) Marshal() []byte {
	b := wire.AppendUint32(nil, uint32(len(m.Env)))
	for _, kv := range m.Env {
		b = wire.AppendString(b, kv)
	}
	b = wire.AppendUint32(b, uint32(m.Umask))
	return wire.AppendString(b, m.Messages)
}

// ParsePAMSessionOpened decodes a PAMSessionOpened.
func ParsePAMSessionOpened(p []byte) (*PAMSessionOpened, error) {
	d := newDecoder(p)
	n := d.Uint32("env count")
	if n > maxSessionEnv && d.err == nil {
		d.err = &wire.FieldError{Field: "env", Err: fmt.Errorf("%d entries, at most %d", n, maxSessionEnv)}
	}
	m := &PAMSessionOpened{}
	for i := uint32(0); i < n && d.err == nil && d.Err() == nil; i++ {
		m.Env = append(m.Env, d.string("env", maxSessionEnvLen))
	}
	m.Umask = int32(d.Uint32("umask"))
	if (m.Umask < -1 || m.Umask > 0o777) && d.err == nil {
		d.err = &wire.FieldError{Field: "umask", Err: fmt.Errorf("%#o is not a file mode mask", m.Umask)}
	}
	m.Messages = d.string("messages", maxSessionMessage)
	return m, d.done(TypePAMSessionOpened)
}

// Spawn asks the keeper to start a session program: exec.Cmd's fields,
// with the files of the message as its stdin, stdout and stderr.
type Spawn struct {
	Path, Dir, Chroot string
	Args, Env         []string
	UID, GID          uint32
	Groups            []uint32
	Setsid, Setctty   bool
	Ctty              int
	Umask             uint32
}

// maxSpawnList bounds the arguments and environment entries of a Spawn.
const maxSpawnList = 4096

// Marshal encodes s.
func (s *Spawn) Marshal() ([]byte, error) {
	b := wire.AppendString(wire.AppendString(wire.AppendString(nil, s.Path), s.Dir), s.Chroot)
	b = appendList(appendList(b, s.Args), s.Env)
	b = appendGroups(wire.AppendUint32(wire.AppendUint32(b, s.UID), s.GID), s.Groups)
	b = wire.AppendBool(wire.AppendBool(b, s.Setsid), s.Setctty)
	b = wire.AppendUint32(wire.AppendUint32(b, uint32(int32(s.Ctty))), s.Umask)
	if len(b) > MaxMessage {
		return nil, ErrTooLarge
	}
	return b, nil
}

// ParseSpawn decodes a Spawn (from the server, which the keeper trusts;
// bounded all the same).
func ParseSpawn(p []byte) (*Spawn, error) {
	d := newDecoder(p)
	s := &Spawn{Path: d.string("path", maxText), Dir: d.string("dir", maxText), Chroot: d.string("chroot", maxText)}
	s.Args, s.Env = d.longList("args"), d.longList("env")
	s.UID, s.GID = d.Uint32("uid"), d.Uint32("gid")
	s.Groups = d.groups()
	s.Setsid, s.Setctty = d.boolean("setsid"), d.boolean("setctty")
	s.Ctty, s.Umask = int(int32(d.Uint32("ctty"))), d.Uint32("umask")
	return s, d.done(TypeSpawn)
}

// longList is a list of up to maxSpawnList strings of any bounded length.
func (d *decoder) longList(field string) []string {
	n := d.Uint32(field + " count")
	if n > maxSpawnList && d.err == nil {
		d.err = &wire.FieldError{Field: field, Err: fmt.Errorf("%d entries, at most %d", n, maxSpawnList)}
	}
	var out []string
	for i := uint32(0); i < n && d.err == nil && d.Err() == nil; i++ {
		out = append(out, d.string(field, maxState))
	}
	return out
}

// SpawnReply is the process id of a started program, a child of the
// server.
type SpawnReply struct{ PID int32 }

// Marshal encodes r.
func (r *SpawnReply) Marshal() []byte { return wire.AppendUint32(nil, uint32(r.PID)) }

// ParseSpawnReply decodes a SpawnReply.
func ParseSpawnReply(p []byte) (*SpawnReply, error) {
	d := newDecoder(p)
	r := &SpawnReply{PID: int32(d.Uint32("pid"))}
	if r.PID <= 0 && d.err == nil {
		d.err = &wire.FieldError{Field: "pid", Err: fmt.Errorf("pid %d", r.PID)}
	}
	return r, d.done(TypeSpawn)
}
