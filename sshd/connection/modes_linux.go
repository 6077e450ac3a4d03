//go:build linux

package connection

import (
	"os"

	"github.com/creack/pty"
	"os/user"
	"strconv"

	"golang.org/x/sys/unix"
)

// Control characters by SSH opcode (RFC 4254 §8).
var modeCC = map[byte]int{
	1: unix.VINTR, 2: unix.VQUIT, 3: unix.VERASE, 4: unix.VKILL, 5: unix.VEOF,
	6: unix.VEOL, 7: unix.VEOL2, 8: unix.VSTART, 9: unix.VSTOP, 10: unix.VSUSP,
	12: unix.VREPRINT, 13: unix.VWERASE, 14: unix.VLNEXT, 18: unix.VDISCARD,
}

// modeFlag names the termios word and bit an opcode toggles.
type modeFlag struct {
	word int // 0 iflag, 1 lflag, 2 oflag, 3 cflag
	bit  uint32
}

var modeFlags = map[byte]modeFlag{
	30: {0, unix.IGNPAR}, 31: {0, unix.PARMRK}, 32: {0, unix.INPCK}, 33: {0, unix.ISTRIP},
	34: {0, unix.INLCR}, 35: {0, unix.IGNCR}, 36: {0, unix.ICRNL}, 37: {0, unix.IUCLC},
	38: {0, unix.IXON}, 39: {0, unix.IXANY}, 40: {0, unix.IXOFF}, 41: {0, unix.IMAXBEL},
	42: {0, unix.IUTF8},
	50: {1, unix.ISIG}, 51: {1, unix.ICANON}, 52: {1, unix.XCASE}, 53: {1, unix.ECHO},
	54: {1, unix.ECHOE}, 55: {1, unix.ECHOK}, 56: {1, unix.ECHONL}, 57: {1, unix.NOFLSH},
	58: {1, unix.TOSTOP}, 59: {1, unix.IEXTEN}, 60: {1, unix.ECHOCTL}, 61: {1, unix.ECHOKE},
	62: {1, unix.PENDIN},
	70: {2, unix.OPOST}, 71: {2, unix.OLCUC}, 72: {2, unix.ONLCR}, 73: {2, unix.OCRNL},
	74: {2, unix.ONOCR}, 75: {2, unix.ONLRET},
	92: {3, unix.PARENB}, 93: {3, unix.PARODD},
}

// applyModes sets the client's terminal modes on tty.
func applyModes(tty *os.File, ms []termMode) error {
	if len(ms) == 0 {
		return nil
	}
	fd := int(tty.Fd())
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	for _, m := range ms {
		applyMode(t, m)
	}
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}

func applyMode(t *unix.Termios, m termMode) {
	if i, ok := modeCC[m.op]; ok {
		t.Cc[i] = uint8(m.arg)
		return
	}
	if f, ok := modeFlags[m.op]; ok {
		w := [...]*uint32{&t.Iflag, &t.Lflag, &t.Oflag, &t.Cflag}[f.word]
		if m.arg != 0 {
			*w |= f.bit
		} else {
			*w &^= f.bit
		}
		return
	}
	switch m.op {
	case 90, 91: // CS7, CS8
		if m.arg != 0 {
			t.Cflag = t.Cflag&^unix.CSIZE | map[byte]uint32{90: unix.CS7, 91: unix.CS8}[m.op]
		}
	}
}

// lookupGroupID returns the id of a named group.
func lookupGroupID(name string) (int, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(g.Gid)
}

// setWinsize resizes a pty through SyscallConn: pty.Setsize calls Fd,
// which would switch the master to blocking mode (no read deadlines) and
// race with Close.
func setWinsize(f *os.File, ws *pty.Winsize) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	uw := &unix.Winsize{Row: ws.Rows, Col: ws.Cols, Xpixel: ws.X, Ypixel: ws.Y}
	var ierr error
	if err := sc.Control(func(fd uintptr) { ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, uw) }); err != nil {
		return err
	}
	return ierr
}

// pollable returns the pty master f as a non-blocking, pollable file,
// on whose reads deadlines work: pty.Open calls Fd, which leaves the
// master in blocking mode, where SetReadDeadline does nothing and a
// copy from it can only end when every terminal descriptor is closed.
// The descriptor is duplicated (close-on-exec) and f closed.
func pollable(f *os.File) (*os.File, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	nfd, derr := -1, error(nil)
	if err := sc.Control(func(fd uintptr) { nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		derr = err
	}
	name := f.Name()
	f.Close()
	if derr != nil {
		return nil, derr
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil, err
	}
	return os.NewFile(uintptr(nfd), name), nil
}
