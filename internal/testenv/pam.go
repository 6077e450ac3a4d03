package testenv

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// PAMDir is where PAMService installs its services.
const PAMDir = "/etc/pam.d"

var pamSweepOnce sync.Once

// PAMService installs a throwaway PAM service (a file in PAMDir named
// prefix and random digits, holding stack), removes it when the test ends
// and returns its name. It needs root (see Root). The file's first line
// names this process, so that a later test process removes it if this one
// dies before its cleanup runs, as AddUser does for users.
func PAMService(t testing.TB, prefix, stack string) string {
	t.Helper()
	Root(t)
	pamSweepOnce.Do(func() { sweepStaleServices(PAMDir, processAlive) })
	name := UniqueName(prefix)
	path := filepath.Join(PAMDir, name)
	if err := os.WriteFile(path, []byte("# "+ownerStamp(os.Getpid())+"\n"+stack), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	return name
}

// sweepStaleServices removes the files in dir whose first line is the
// owner stamp of a process for which alive is false.
func sweepStaleServices(dir string, alive func(pid int) bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if pid, ok := stampedBy(path); ok && !alive(pid) {
			os.Remove(path)
		}
	}
}

// stampedBy returns the process a file's first line names as its owner.
func stampedBy(path string) (int, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "# "+stampPrefix)
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(rest)
	return pid, err == nil && pid > 0
}
