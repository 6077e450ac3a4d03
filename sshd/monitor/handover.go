package monitor

import (
	"bytes"
	"fmt"
	"time"

	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/loginrec"
	"github.com/offload/offload/sshd/wire"
)

// The hand-over state in binary: what a stopping monitor passes its
// session keeper on a pipe (Detach, Resume), in the SSH wire types of
// every message between offload's processes, each field bounded and
// trailing bytes refused (FuzzHandoverState).

// Bounds of a decoded handoverState.
const (
	maxHandoverList = 1 << 16  // host keys, processes, connections, groups, login records
	maxHandoverText = 4 << 10  // names, addresses
	maxHandoverBlob = 64 << 10 // keys, session ids
	maxHandoverTime = 16       // time.Time.MarshalBinary
	maxHandoverAddr = 64       // netip.Addr.MarshalBinary, with a zone
)

func (st *handoverState) marshal() ([]byte, error) {
	b := wire.AppendUint32(nil, uint32(st.Version))
	b = appendBlobs(b, st.HostPublicKeys)
	b = wire.AppendUint32(b, uint32(len(st.Children)))
	var err error
	for i := range st.Children {
		if b, err = st.Children[i].append(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendBlobs(b []byte, l [][]byte) []byte {
	b = wire.AppendUint32(b, uint32(len(l)))
	for _, v := range l {
		b = wire.AppendBytes(b, v)
	}
	return b
}

func appendInt(b []byte, v int) []byte { return wire.AppendUint64(b, uint64(int64(v))) }

func (cs *childState) append(b []byte) ([]byte, error) {
	for _, s := range []string{cs.Name, cs.Key, cs.User} {
		b = wire.AppendString(b, s)
	}
	b = appendInt(b, cs.PID)
	b = appendIdentity(b, cs.Identity)
	b = appendInt(appendInt(b, cs.File), cs.Session)
	b = wire.AppendUint32(b, uint32(len(cs.Conns)))
	var err error
	for i := range cs.Conns {
		if b, err = cs.Conns[i].append(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendIdentity(b []byte, id *ipc.Identity) []byte {
	b = wire.AppendBool(b, id != nil)
	if id == nil {
		return b
	}
	b = wire.AppendUint32(wire.AppendUint32(b, id.Uid), id.Gid)
	b = wire.AppendBool(b, id.Groups != nil)
	b = wire.AppendUint32(b, uint32(len(id.Groups)))
	for _, g := range id.Groups {
		b = wire.AppendUint32(b, g)
	}
	return b
}

func (s *connState) append(b []byte) ([]byte, error) {
	b = wire.AppendUint64(b, s.ID)
	for _, v := range []string{s.Local, s.Remote, s.User} {
		b = wire.AppendString(b, v)
	}
	b = wire.AppendBytes(wire.AppendBytes(b, s.SessionID), s.HostKey)
	b = wire.AppendUint32(b, uint32(len(s.TTYs)))
	var err error
	for _, r := range s.TTYs {
		if b, err = appendRecord(b, r); err != nil {
			return nil, err
		}
	}
	return appendTime(b, s.Start)
}

func appendRecord(b []byte, r loginrec.Record) ([]byte, error) {
	b = wire.AppendString(b, r.User)
	b = appendInt(wire.AppendUint32(b, r.UID), r.PID)
	b = wire.AppendString(wire.AppendString(b, r.TTY), r.Host)
	addr, err := r.Addr.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("monitor: hand-over: %w", err)
	}
	return appendTime(wire.AppendBytes(b, addr), r.Time)
}

func appendTime(b []byte, t time.Time) ([]byte, error) {
	v, err := t.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("monitor: hand-over: %w", err)
	}
	return wire.AppendBytes(b, v), nil
}

// parseHandoverState decodes a handoverState (of this version only: a
// keeper is the same binary as the monitor that started it).
func parseHandoverState(p []byte) (*handoverState, error) {
	r := wire.NewReader(p)
	st := &handoverState{Version: int(r.Uint32("version"))}
	if r.Err() == nil && st.Version != handoverVersion {
		return nil, fmt.Errorf("monitor: hand-over state version %d, want %d", st.Version, handoverVersion)
	}
	st.HostPublicKeys = readBlobs(r)
	n := r.Count("processes", maxHandoverList)
	for i := 0; i < n && r.Err() == nil; i++ {
		st.Children = append(st.Children, readChild(r))
	}
	if err := r.Done(); err != nil {
		return nil, fmt.Errorf("monitor: hand-over state: %w", err)
	}
	return st, nil
}

func readBlobs(r *wire.Reader) [][]byte {
	var out [][]byte
	n := r.Count("host keys", maxHandoverList)
	for i := 0; i < n && r.Err() == nil; i++ {
		out = append(out, r.BytesMax("host key", maxHandoverBlob))
	}
	return out
}

func readInt(r *wire.Reader, field string) int { return int(r.Int64(field)) }

func readChild(r *wire.Reader) childState {
	cs := childState{Name: r.StringMax("name", maxHandoverText), Key: r.StringMax("key", maxHandoverText),
		User: r.StringMax("user", maxHandoverText)}
	cs.PID = readInt(r, "pid")
	cs.Identity = readIdentity(r)
	cs.File, cs.Session = readInt(r, "file"), readInt(r, "session")
	n := r.Count("connections", maxHandoverList)
	for i := 0; i < n && r.Err() == nil; i++ {
		cs.Conns = append(cs.Conns, readConn(r))
	}
	return cs
}

func readIdentity(r *wire.Reader) *ipc.Identity {
	if !r.StrictBool("identity") {
		return nil
	}
	id := &ipc.Identity{Uid: r.Uint32("uid"), Gid: r.Uint32("gid")}
	some := r.StrictBool("groups")
	n := r.Count("groups", maxHandoverList)
	if some {
		id.Groups = make([]uint32, 0, min(n, 64))
	} else if n > 0 {
		r.Fail("groups", fmt.Errorf("%d groups in no list", n))
	}
	for i := 0; i < n && r.Err() == nil; i++ {
		id.Groups = append(id.Groups, r.Uint32("group"))
	}
	return id
}

func readConn(r *wire.Reader) connState {
	s := connState{ID: r.Uint64("conn id")}
	s.Local, s.Remote = r.StringMax("local", maxHandoverText), r.StringMax("remote", maxHandoverText)
	s.User = r.StringMax("user", maxHandoverText)
	s.SessionID, s.HostKey = readCopy(r, "session id"), readCopy(r, "host key")
	n := r.Count("login records", maxHandoverList)
	for i := 0; i < n && r.Err() == nil; i++ {
		s.TTYs = append(s.TTYs, readRecord(r))
	}
	s.Start = readTime(r, "start")
	return s
}

// readCopy copies a blob out of the state, which may be reused.
func readCopy(r *wire.Reader, field string) []byte {
	b := r.BytesMax(field, maxHandoverBlob)
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

func readRecord(r *wire.Reader) loginrec.Record {
	rec := loginrec.Record{User: r.StringMax("tty user", maxHandoverText), UID: r.Uint32("tty uid")}
	rec.PID = readInt(r, "tty pid")
	rec.TTY, rec.Host = r.StringMax("tty", maxHandoverText), r.StringMax("tty host", maxHandoverText)
	if err := rec.Addr.UnmarshalBinary(r.BytesMax("tty address", maxHandoverAddr)); err != nil {
		r.Fail("tty address", err)
	}
	rec.Time = readTime(r, "tty time")
	return rec
}

func readTime(r *wire.Reader, field string) time.Time {
	var t time.Time
	b := r.BytesMax(field, maxHandoverTime)
	if r.Err() == nil {
		if err := t.UnmarshalBinary(b); err != nil {
			r.Fail(field, err)
		} else if again, err := t.MarshalBinary(); err != nil || !bytes.Equal(again, b) {
			// time.Time reads encodings it does not write (a zone offset
			// in seconds below zero, one of 60 seconds or more, a nanosecond
			// field out of range): such a state would not encode again, or
			// not to what was read.
			r.Fail(field, fmt.Errorf("time %x is not one time.Time encodes", b))
		}
	}
	return t
}
