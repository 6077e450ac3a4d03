package hostile

import (
	"errors"
	"strings"

	"fmt"
	"os"
	"testing"
	"time"

	"github.com/offload/offload/internal/proctree"
	"github.com/offload/offload/sshd/wire"
	"github.com/offload/offload/test/hostile/rawclient"
)

// openWith opens a session channel with the given receive window and
// maximum packet size; it returns nil when the server refuses.
func openWith(t *testing.T, rc *rawclient.Conn, window, maxPacket uint32) *rawclient.Channel {
	t.Helper()
	ch, err := rc.OpenSessionWith(0, window, maxPacket)
	if errors.Is(err, rawclient.ErrOpenRefused) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// execShlvl runs command on ch with SHLVL=1 (see harness.NewSession).
func execShlvl(t *testing.T, rc *rawclient.Conn, ch *rawclient.Channel, command string) {
	t.Helper()
	env := wire.AppendUint32([]byte{wire.MsgChannelRequest}, ch.Remote)
	env = wire.AppendBool(wire.AppendString(env, "env"), false)
	rc.WritePacket(wire.AppendString(wire.AppendString(env, "SHLVL"), "1"))
	req := wire.AppendUint32([]byte{wire.MsgChannelRequest}, ch.Remote)
	req = wire.AppendBool(wire.AppendString(req, "exec"), false)
	if err := rc.WritePacket(wire.AppendString(req, command)); err != nil {
		t.Fatal(err)
	}
}

// readOutput collects channel data until the channel closes.
func readOutput(rc *rawclient.Conn, within time.Duration) ([]byte, int, error) {
	rc.SetDeadline(time.Now().Add(within))
	var out []byte
	packets := 0
	for {
		m, err := rc.Next()
		if err != nil {
			return out, packets, err
		}
		switch m[0] {
		case wire.MsgChannelData:
			out = append(out, wire.NewReader(m[5:]).Bytes("data")...)
			packets++
		case wire.MsgChannelClose:
			return out, packets, nil
		}
	}
}

// TestAwkwardPeers are legal but unusual clients: tiny packets, a zero
// window, a dropped connection with a process running.
func TestAwkwardPeers(t *testing.T) {
	e := newEnv(t, nil)
	e.run("max-packet-0-refused", func(t *testing.T) {
		rc := e.loggedIn(t)
		if ch := openWith(t, rc, 1<<20, 0); ch != nil {
			t.Error("a channel with maximum packet size 0 was accepted")
		}
	})
	e.run("max-packet-1", func(t *testing.T) {
		rc := e.loggedIn(t)
		ch := openWith(t, rc, 1<<20, 1)
		if ch == nil {
			t.Skip("server refuses a 1-byte maximum packet")
		}
		execShlvl(t, rc, ch, "echo hello")
		out, packets, err := readOutput(rc, replyTimeout)
		if err != nil || string(out) != "hello\n" || packets != len(out) {
			t.Errorf("output %q in %d packets, %v", out, packets, err)
		}
	})
	e.run("window-0-until-adjust", func(t *testing.T) {
		rc := e.loggedIn(t)
		ch := openWith(t, rc, 0, 32768)
		if ch == nil {
			t.Fatal("channel refused")
		}
		execShlvl(t, rc, ch, "echo hello")
		rc.NC.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		for {
			m, err := rc.Next()
			if isTimeout(err) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if m[0] == wire.MsgChannelData {
				t.Fatal("data sent into a zero window")
			}
		}
		rc.SetDeadline(time.Now().Add(replyTimeout))
		if err := rc.WritePacket(rawclient.WindowAdjustPacket(ch.Remote, 100)); err != nil {
			t.Fatal(err)
		}
		out, _, err := readOutput(rc, replyTimeout)
		if err != nil || string(out) != "hello\n" {
			t.Errorf("after WINDOW_ADJUST: %q, %v", out, err)
		}
	})
	// The program is not signalled when its client vanishes (as under
	// OpenSSH's sshd; sshd/connection TestProgramOutlivesConnection): one
	// that reads its stdin ends at the EOF the teardown gives it, and the
	// shell waiting for it with it.
	e.run("drop-with-process-running", func(t *testing.T) {
		marker := fmt.Sprintf("offload-drop-%d", os.Getpid())
		rc := e.loggedIn(t)
		ch := openWith(t, rc, 1<<20, 32768)
		execShlvl(t, rc, ch, "cat; : "+marker)
		if err := waitProcs(marker, 1, replyTimeout); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		if err := waitProcs(marker, 0, replyTimeout); err != nil {
			t.Errorf("after the client vanished: %v", err)
		}
	})
}

// waitProcs waits until exactly n processes have marker in their
// command line.
func waitProcs(marker string, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		got := countProcs(marker)
		if got == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes %q, want %d", got, marker, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func countProcs(marker string) int {
	pids, _ := proctree.Find("/proc", func(argv []string) bool {
		return strings.Contains(strings.Join(argv, " "), marker)
	})
	return len(pids)
}
