package privsep

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
)

// occurrences counts secret in the readable memory of process pid.
func occurrences(t *testing.T, pid int, secret []byte) int {
	t.Helper()
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0 // gone
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatalf("memory of %d: %v", pid, err)
	}
	defer mem.Close()
	n := 0
	s := bufio.NewScanner(bytes.NewReader(maps))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 2 || f[1][0] != 'r' || (len(f) >= 6 && (f[5] == "[vvar]" || f[5] == "[vsyscall]")) {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		for off := start; off < end; off += 1 << 20 {
			b := make([]byte, min(1<<20+uint64(len(secret)), end-off))
			m, _ := mem.ReadAt(b, int64(off))
			n += bytes.Count(b[:m], secret)
		}
	}
	return n
}

// TestPasswordsClearedFromMemory: after password logins (UsePAM no: the
// password checked with crypt; UsePAM yes: by PAM) the password is
// nowhere in the memory of the monitor, the pre-auth workers or the
// post-auth process, as in OpenSSH's (which clears it once used).
func TestPasswordsClearedFromMemory(t *testing.T) {
	for _, tc := range []struct{ name, pam, method string }{
		{"UsePAM no, password", "no", "password"},
		{"UsePAM yes, password", "yes", "password"},
		{"UsePAM yes, keyboard-interactive", "yes", "keyboard-interactive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, nil, "PasswordAuthentication yes", "KbdInteractiveAuthentication yes", "UsePAM "+tc.pam, "PreauthWorkers 1")
			a := newAccount(t)
			raw := make([]byte, 12)
			rand.Read(raw)
			pw := "pw-" + hex.EncodeToString(raw)
			testenv.SetPassword(t, a.Username, pw)
			method := ssh.Password(pw)
			if tc.method == "keyboard-interactive" {
				method = ssh.KeyboardInteractive(func(_, _ string, q []string, _ []bool) ([]string, error) {
					answers := make([]string, len(q))
					for i := range answers {
						answers[i] = pw
					}
					return answers, nil
				})
			}
			for range 3 {
				c, err := ssh.Dial("tcp", "127.0.0.1:"+d.port, &ssh.ClientConfig{User: a.Username,
					Auth: []ssh.AuthMethod{method}, HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
				if err != nil {
					t.Fatalf("password login: %v", err)
				}
				s, err := c.NewSession()
				if err == nil {
					s.Run("true")
				}
				c.Close()
			}
			pids := append([]int{d.serverPid()}, d.children("offload-sshd")...)
			for _, pid := range pids {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				cmd = bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})
				n := occurrences(t, pid, []byte(pw))
				if n == 1 && bytes.Contains(cmd, []byte("pre-auth worker")) {
					// The known residue (docs/security.md): one copy of the
					// request sent to the monitor, in about one run in seven.
					t.Logf("known residue: the password is once in the memory of %d (%s)", pid, cmd)
					continue
				}
				if n > 0 {
					t.Errorf("the password is %d times in the memory of %d (%s)", n, pid, cmd)
				}
			}
		})
	}
}
