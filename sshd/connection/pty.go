package connection

import (
	"errors"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/creack/pty"

	"github.com/offload/offload/sshd/wire"
)

// Limits on terminal requests.
const (
	maxTermLen  = 256
	maxTermDim  = 10000 // rows or columns
	maxTermPix  = 65535
	maxModesLen = 4096
)

// ptyRequest is a parsed pty-req.
type ptyRequest struct {
	term  string
	size  pty.Winsize
	modes []termMode
	name  string // /dev/pts/N once allocated
}

// termMode is one encoded terminal mode (RFC 4254 §8).
type termMode struct {
	op  byte
	arg uint32
}

func (s *session) ptyReq(b []byte) error {
	if s.m.perm.NoPTY {
		return refuse("pty-req", "no-pty set for this login")
	}
	if s.m.cfg.NoTTY {
		return refuse("pty-req", "PermitTTY no")
	}
	if s.pty != nil || s.process() != nil {
		return refuse("pty-req", "pty already requested or session started")
	}
	req, err := parsePTYRequest(b)
	if err != nil {
		return err
	}
	s.pty = req
	return nil
}

func parsePTYRequest(b []byte) (*ptyRequest, error) {
	r := wire.NewReader(b)
	term := r.String("TERM")
	cols, rows := r.Uint32("columns"), r.Uint32("rows")
	w, h := r.Uint32("width"), r.Uint32("height")
	modes := r.Bytes("terminal modes")
	if err := r.Done(); err != nil {
		return nil, refuse("pty-req", "malformed: %v", err)
	}
	if len(term) > maxTermLen || strings.ContainsAny(term, "\x00\n=") {
		return nil, refuse("pty-req", "bad TERM")
	}
	if cols > maxTermDim || rows > maxTermDim || w > maxTermPix || h > maxTermPix {
		return nil, refuse("pty-req", "absurd terminal size %dx%d (%dx%d px)", cols, rows, w, h)
	}
	ms, err := parseModes(modes)
	if err != nil {
		return nil, err
	}
	if term == "" {
		term = "vt100"
	}
	return &ptyRequest{term: term, modes: ms, size: winsize(cols, rows, w, h)}, nil
}

func winsize(cols, rows, w, h uint32) pty.Winsize {
	c := func(v, hi uint32) uint16 { return uint16(min(v, hi)) }
	return pty.Winsize{Cols: c(cols, maxTermDim), Rows: c(rows, maxTermDim), X: c(w, maxTermPix), Y: c(h, maxTermPix)}
}

// parseModes decodes opcode/argument pairs up to TTY_OP_END. Opcodes
// 160 and above have undefined arguments, so parsing stops there, as
// RFC 4254 §8 prescribes.
func parseModes(b []byte) ([]termMode, error) {
	if len(b) > maxModesLen {
		return nil, refuse("pty-req", "terminal modes too long")
	}
	var ms []termMode
	r := wire.NewReader(b)
	for r.Len() > 0 {
		op := r.Byte("opcode")
		if op == 0 || op >= 160 {
			break
		}
		arg := r.Uint32("argument")
		if r.Err() != nil {
			return nil, refuse("pty-req", "malformed terminal modes: %v", r.Err())
		}
		ms = append(ms, termMode{op, arg})
	}
	return ms, nil
}

// windowChange resizes the pty (sizes are clamped, never refused).
func (s *session) windowChange(b []byte) error {
	size, err := parseWindowChange(b)
	if err != nil {
		return err
	}
	if s.pty == nil {
		return refuse("window-change", "no pty")
	}
	s.pty.size = size
	if p := s.process(); p != nil && p.pty != nil {
		return setWinsize(p.pty, &s.pty.size)
	}
	return nil
}

func parseWindowChange(b []byte) (pty.Winsize, error) {
	r := wire.NewReader(b)
	cols, rows := r.Uint32("columns"), r.Uint32("rows")
	w, h := r.Uint32("width"), r.Uint32("height")
	if err := r.Done(); err != nil {
		return pty.Winsize{}, refuse("window-change", "malformed: %v", err)
	}
	return winsize(cols, rows, w, h), nil
}

// resizeInline applies a window-change without a reply in the read loop,
// while the channel's program runs on a pty: then it takes effect before
// the data the client sent after it reaches the program, as with OpenSSH
// (queued behind the session's other requests, a command typed right
// after a resize could still see the old size). It reports false, having
// done nothing, when the request must take the queue.
func (c *channel) resizeInline(r requestMsg) bool {
	f := c.resize.Load()
	if f == nil || r.kind != "window-change" || r.wantReply {
		return false
	}
	size, err := parseWindowChange(r.payload)
	if err != nil {
		return false // the queue refuses and logs it
	}
	setWinsize(f, &size) // fails harmlessly once the pty is closed
	return true
}

// openPTY opens a pseudo-terminal with the requested size and modes,
// owned by the user.
func (s *session) openPTY() (*childIO, error) {
	ptm, tty, err := pty.Open()
	if err != nil {
		return nil, err
	}
	if ptm, err = pollable(ptm); err != nil {
		tty.Close()
		return nil, err
	}
	if err := s.setupTTY(ptm, tty); err != nil {
		closeAll(ptm, tty)
		return nil, err
	}
	return &childIO{stdin: tty, stdout: tty, stderr: tty, out: ptm}, nil
}

// setupTTY applies size, modes and ownership before the child starts.
func (s *session) setupTTY(ptm, tty *os.File) error {
	if err := setWinsize(ptm, &s.pty.size); err != nil {
		return err
	}
	if err := applyModes(tty, s.pty.modes); err != nil {
		s.m.log.Debug("connection: terminal modes not applied", "err", err)
	}
	s.pty.name = tty.Name()
	if a, err := s.m.account(); err == nil && a.cred != nil {
		os.Chown(s.pty.name, int(a.uid), ttyGroup(a.gid))
		os.Chmod(s.pty.name, 0o620)
	}
	return nil
}

// ttyGroup is the "tty" group when it exists, else the user's group.
func ttyGroup(gid uint32) int {
	if g, err := lookupGroupID("tty"); err == nil {
		return g
	}
	return int(gid)
}

// pumpPTYInput copies channel data to the pty master. A pty has no
// half-close, so the peer's EOF just ends the copy.
func (s *session) pumpPTYInput(ptm *os.File) {
	buf := make([]byte, stdinBufSize)
	_, err := io.CopyBuffer(writerOnly{ptm}, readerOnly{s.c}, buf)
	if err != nil {
		io.CopyBuffer(io.Discard, readerOnly{s.c}, buf)
	}
}

// eioIsEOF turns the EIO a pty master returns after the last slave
// closed into io.EOF.
type eioIsEOF struct{ f *os.File }

func (r eioIsEOF) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if errors.Is(err, syscall.EIO) {
		err = io.EOF
	}
	return n, err
}
