//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const probeEnv = "OFFLOAD_SANDBOX_PROBE"

func TestMain(m *testing.M) {
	switch os.Getenv(probeEnv) {
	case "1":
		os.Exit(probe())
	case "landlock":
		os.Exit(probeLandlock())
	}
	os.Exit(m.Run())
}

// probe runs in a child: it enters the pre-auth sandbox and tries what a
// compromised worker would, printing one line per attempt.
func probe() int {
	r, w, _ := os.Pipe() // held before the sandbox: must keep working
	rep, err := EnterPreauth()
	if err != nil {
		fmt.Println("enter:", err)
		return 1
	}
	fmt.Println("report:", rep)
	try := func(name string, err error) { fmt.Printf("%s: %v\n", name, err) }
	_, err = os.Open("/etc/passwd")
	try("open", err)
	_, err = os.Create(os.TempDir() + "/offload-sandbox-probe")
	try("create", err)
	_, err = net.Dial("tcp", "127.0.0.1:1")
	try("socket", err)
	try("exec", exec.Command("/bin/true").Run())
	_, err = syscall.ForkExec("/bin/true", nil, nil)
	try("forkexec", err)
	try("kill", syscall.Kill(1, 0))
	// The runtime and held descriptors still work: goroutines on new
	// threads, the GC, timers, a pipe.
	done := make(chan bool)
	for i := 0; i < 8; i++ {
		go func() { runtime.LockOSThread(); time.Sleep(10 * time.Millisecond); done <- true }()
	}
	for i := 0; i < 8; i++ {
		<-done
	}
	runtime.GC()
	w.Write([]byte("pipe ok"))
	w.Close()
	b := make([]byte, 16)
	n, _ := r.Read(b)
	fmt.Printf("held: %s\n", b[:n])
	return 0
}

// TestPreauthSandbox: after EnterPreauth a process cannot open files,
// create sockets, execute programs, fork or signal other processes, but
// its runtime and held descriptors keep working.
func TestPreauthSandbox(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), probeEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		lines[k] = v
	}
	t.Logf("%s", out)
	if !strings.Contains(lines["report"], "seccomp") || !strings.Contains(lines["report"], "no_new_privs") {
		t.Fatalf("sandbox not in force: %s", lines["report"])
	}
	for _, k := range []string{"open", "create", "socket", "exec", "forkexec", "kill"} {
		v := lines[k]
		if v == "" || v == "<nil>" {
			t.Errorf("%s succeeded inside the sandbox", k)
		}
		if !strings.Contains(v, "not permitted") && !strings.Contains(v, "permission denied") {
			t.Errorf("%s: %q, want EPERM or EACCES", k, v)
		}
	}
	if lines["held"] != "pipe ok" {
		t.Fatalf("held descriptor: %q", lines["held"])
	}
}

// probeLandlock applies only the Landlock part, to show it holds on its
// own where seccomp is missing.
func probeLandlock() int {
	r := &Report{}
	if err := restrictLandlock(r); err != nil {
		fmt.Println("enter:", err)
		return 1
	}
	if r.Landlock == 0 {
		fmt.Println("landlock: none")
		return 0
	}
	_, err := os.Open("/etc/passwd")
	fmt.Printf("landlock: %d\nopen: %v\n", r.Landlock, err)
	return 0
}

func TestLandlockAlone(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), probeEnv+"=landlock")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	s := string(out)
	if strings.Contains(s, "landlock: none") {
		t.Skip("this kernel has no Landlock")
	}
	if !strings.Contains(s, "open: open /etc/passwd: permission denied") {
		t.Fatalf("Landlock did not refuse a file open:\n%s", s)
	}
}

// TestOpenAs: a root-only file is refused when opened as another user,
// through a symbolic link too, and the calling process keeps its own
// rights afterwards.
func TestOpenAs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("OpenAs as another user needs root")
	}
	dir, err := os.MkdirTemp("", "openas")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	secret := dir + "/secret"
	os.WriteFile(secret, []byte("root only"), 0o600)
	link := dir + "/link"
	os.Symlink(secret, link)
	nobody := Identity{Uid: 65534, Gid: 65534}
	for _, p := range []string{secret, link} {
		f, err := OpenAs(nobody, p, os.O_RDONLY)
		if err == nil {
			f.Close()
			t.Fatalf("%s opened as nobody", p)
		}
		if !os.IsPermission(err) {
			t.Fatalf("%s: %v, want permission denied", p, err)
		}
	}
	open := dir + "/open"
	os.WriteFile(open, []byte("all"), 0o644)
	f, err := OpenAs(nobody, open, os.O_RDONLY)
	if err != nil {
		t.Fatalf("a world-readable file: %v", err)
	}
	f.Close()
	for i := 0; i < 50; i++ { // no thread is given back with nobody's identity
		if b, err := os.ReadFile(secret); err != nil || string(b) != "root only" {
			t.Fatalf("after OpenAs, root reads its file: %q %v", b, err)
		}
	}
	for i := 0; i < 20; i++ {
		if f, err := OpenAs(nobody, open, os.O_RDONLY); err == nil {
			f.Close()
		}
	}
	checkThreadsAreRoot(t)
}

// checkThreadsAreRoot: every thread of the process has root's fsuid,
// fsgid and groups (the threads OpenAs used came back as themselves).
func checkThreadsAreRoot(t *testing.T) {
	t.Helper()
	self, _ := os.ReadFile("/proc/self/status")
	want := statusLine(string(self), "Groups:")
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended
		}
		st := string(b)
		uid, gid := strings.Fields(statusLine(st, "Uid:")), strings.Fields(statusLine(st, "Gid:"))
		if len(uid) != 4 || len(gid) != 4 || uid[3] != "0" || gid[3] != gid[1] || statusLine(st, "Groups:") != want {
			t.Errorf("%s: Uid %v Gid %v Groups %q, want fsuid 0, fsgid the egid, groups %q", p, uid, gid, statusLine(st, "Groups:"), want)
		}
	}
}

func statusLine(status, key string) string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, key); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestCheckChroot: OpenSSH's ownership rules for ChrootDirectory.
func TestCheckChroot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot directories must be root's")
	}
	// Not under /tmp: it is writable by everyone, so no chroot there passes.
	base, err := os.MkdirTemp("/var/lib", "offload-chroot-test")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	if err := CheckChroot("/tmp"); !errors.Is(err, ErrChrootUnsafe) {
		t.Errorf("/tmp (mode 1777): %v, want ErrChrootUnsafe", err)
	}
	good := base + "/jail"
	os.Mkdir(good, 0o755)
	if err := CheckChroot(good); err != nil {
		t.Fatalf("a root-owned 0755 chain refused: %v", err)
	}
	for name, setup := range map[string]func(string){
		"group-writable":  func(p string) { os.Chmod(p, 0o775) },
		"owned by a user": func(p string) { os.Chown(p, 1000, 1000) },
	} {
		p := base + "/" + strings.ReplaceAll(name, " ", "-")
		os.Mkdir(p, 0o755)
		setup(p)
		if err := CheckChroot(p); !errors.Is(err, ErrChrootUnsafe) {
			t.Errorf("%s: %v, want ErrChrootUnsafe", name, err)
		}
	}
	if err := CheckChroot("relative/dir"); err == nil {
		t.Error("a relative path was accepted")
	}
}

// childIgnoresHangup reports whether a program started now has SIGHUP
// ignored (bit 0 of SigIgn in its /proc status).
func childIgnoresHangup(t *testing.T) bool {
	t.Helper()
	out, err := exec.Command("sh", "-c", "sed -n 's/^SigIgn:[[:space:]]*//p' /proc/self/status").Output()
	if err != nil {
		t.Fatal(err)
	}
	mask, err := strconv.ParseUint(strings.TrimSpace(string(out)), 16, 64)
	if err != nil {
		t.Fatalf("SigIgn %q: %v", out, err)
	}
	return mask&1 != 0
}

// TestHangupDefault: with SIGHUP ignored in this process (as under
// nohup), programs started after hangupDefault get the default action.
func TestHangupDefault(t *testing.T) {
	signal.Ignore(syscall.SIGHUP)
	t.Cleanup(func() { signal.Reset(syscall.SIGHUP) })
	if !childIgnoresHangup(t) {
		t.Fatal("premise: a child of a process ignoring SIGHUP does not ignore it")
	}
	hangupDefault()
	if childIgnoresHangup(t) {
		t.Fatal("a program started after hangupDefault still ignores SIGHUP")
	}
}
