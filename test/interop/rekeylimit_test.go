package interop_test

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/test/hostile/rawclient"
)

// The rekey tests run the real binary, `offload sshd` in its default
// process model (privilege separation: a post-auth process asks the
// monitor for every re-exchange's host-key signature), with small
// RekeyLimits on either side, for every client of the matrix.

// rekeyOps are the ops of each client that move data both ways: an
// upload by a remote command, and SFTP put and get (or the client's
// nearest).
var rekeyOps = []string{"upload", "sftp", "plink upload", "psftp", "sftp://", "upload+download", "push"}

// bigClients move the large payload; the others, slower or
// redundant, the small one (keeping the test within a minute or two).
var bigClients = []string{"openssh", "x/crypto"}

const (
	bigPayload   = 64 << 20
	smallPayload = 8 << 20
	rekeyLimit1M = 1 << 20
)

// TestRekeyLimit: with `RekeyLimit 1M` on the server, every client
// uploads and gets through SFTP its payload intact (64 MiB for OpenSSH
// and x/crypto, 8 MiB for the others), the server re-keying every MiB;
// with the clients told to re-key every MiB (those that can be), the
// same with the client's re-exchanges. OpenSSH's sshd serves both;
// offload used to disconnect ("monitor: too many key re-exchanges").
func TestRekeyLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("moves hundreds of MiB; not in -short")
	}
	testenv.Root(t)
	e := newEnv(t)
	// One server re-keys every MiB; the other only at its defaults, so
	// that the client's re-exchanges are its own (a client that starts
	// one while the server's KEXINIT crosses it is another test's).
	servers := map[bool]*server{true: startBinary(t, e, "RekeyLimit 1M"), false: startBinary(t, e)}
	big, small := e.withPayload(t, bigPayload), e.withPayload(t, smallPayload)
	saved := rekeyBytes
	defer func() { rekeyBytes = saved }()
	rekeyBytes = rekeyLimit1M
	for _, c := range []cell{
		{name: "server RekeyLimit 1M", axis: "rekey", serverRekey: true},
		{name: "client RekeyLimit 1M", axis: "rekey", clientRekey: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, cl := range allClients() {
				t.Run(cl.name, func(t *testing.T) {
					if c.clientRekey && !cl.rekey {
						t.Skip("the client has no setting to re-key")
					}
					pe := small
					if slices.Contains(bigClients, cl.name) {
						pe = big
					}
					runRekeyOps(t, pe, cl, c, servers[c.serverRekey])
				})
			}
		})
	}
}

// runRekeyOps runs cl's data ops of rekeyOps against the binary's server.
func runRekeyOps(t *testing.T, e *env, cl *client, c cell, s *server) {
	tools := lookTools(t, cl)
	cl.version(t)
	slug := slugRE.ReplaceAllString(strings.ToLower(cl.name+"-"+c.name), "-")
	a := &attempt{e: e, c: c, s: s, remote: e.remoteDir(t, slug), local: t.TempDir(), tools: tools}
	ran := 0
	for _, o := range cl.ops {
		if !o.data || !slices.Contains(rekeyOps, o.name) {
			continue
		}
		ran++
		mark := s.log.mark()
		start := time.Now()
		err := runOp(t, o, a, s, mark)
		recs := s.log.since(mark)
		out := judge(cl, c, err, recs)
		byServer, byClient := rekeys(recs)
		if out.status != "pass" {
			t.Errorf("%s: %s: %s", o.name, out.status, out.detail)
			continue
		}
		t.Logf("%s: intact in %v; re-exchanges started by the server %d, by the client %d",
			o.name, time.Since(start).Round(10*time.Millisecond), byServer, byClient)
	}
	if ran == 0 {
		t.Fatalf("%s has none of the ops %v", cl.name, rekeyOps)
	}
}

// TestRekeyLimitTiny: with `RekeyLimit 16` (OpenSSH's regress rekey
// test) the server would re-key after every packet; it must not during
// user authentication, which the OpenSSH client aborts ("bad message
// during authentication: type 20"). The OpenSSH client logs in and
// moves data, against offload in both process models and against
// OpenSSH's sshd on the same configuration.
func TestRekeyLimitTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short")
	}
	testenv.Root(t)
	testenv.LookPath(t, "ssh", "apt-get install openssh-client")
	e := newEnv(t)
	servers := map[string]*server{
		"offload separated":  startBinary(t, e, "RekeyLimit 16"),
		"offload in-process": e.startServer(t, cell{name: "rekey 16", axis: "rekey", set: func(c *sshd.Config) { c.RekeyLimit = 16 }}),
	}
	if s := startOpenSSH(t, e, "RekeyLimit 16"); s != nil {
		servers["OpenSSH sshd"] = s
	}
	for name, s := range servers {
		t.Run(name, func(t *testing.T) {
			a := &attempt{e: e, c: cell{name: name, axis: "rekey"}, s: s, remote: e.remoteDir(t, slugRE.ReplaceAllString(name, "-")),
				local: t.TempDir(), tools: map[string]string{"ssh": "ssh"}}
			ctx, cancel := opContext(t, &a.prog)
			defer cancel()
			if err := a.wantOutput(ctx, execWant, nil, "ssh", a.sshArgs(execCommand)...); err != nil {
				t.Fatalf("login: %v", err)
			}
			dst := a.remotePath("upload")
			if _, err := a.cmd(ctx, nil, e.payload, "ssh", a.sshArgs("cat > "+dst)...); err != nil {
				t.Fatalf("upload: %v", err)
			}
			if err := a.checkUpload(dst); err != nil {
				t.Fatal(err)
			}
			if s.log != nil {
				s.settle(t, 0, true)
				byServer, byClient := rekeys(s.log.since(0))
				if byServer == 0 {
					t.Errorf("no re-exchange started by the server with RekeyLimit 16")
				}
				t.Logf("login and 1 MiB upload; re-exchanges by the server %d, by the client %d", byServer, byClient)
			}
		})
	}
}

// TestPreauthRekeyFloodSeparated: the re-exchanges of a client that
// has not authenticated stay refused beyond the monitor's limit (two
// per connection, then one per 10 s) in the separated process model.
func TestPreauthRekeyFloodSeparated(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short")
	}
	testenv.Root(t)
	e := newEnv(t)
	s := startBinary(t, e)
	rc, err := rawclient.Dial(s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rc.SetDeadline(testenv.StartupDeadline(t)) // a hang guard: the server ends the flood
	if err := rc.Handshake(nil); err != nil {
		t.Fatal(err)
	}
	done := 0
	for ; done < 50; done++ {
		if err := rc.Rekey(nil); err != nil {
			t.Logf("the server ended the flood after %d re-exchanges: %v", done, err)
			break
		}
	}
	if done > 3 {
		t.Fatalf("%d re-exchanges before authentication, want at most 3", done)
	}
}

// withPayload is e with a random payload of n bytes of its own.
func (e *env) withPayload(t *testing.T, n int) *env {
	t.Helper()
	pe := *e
	pe.payload = filepath.Join(e.root, fmt.Sprintf("payload-%d", n))
	f, err := os.Create(pe.payload)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.Reader, int64(n)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	os.Chmod(pe.payload, 0o644)
	pe.sum = hex.EncodeToString(h.Sum(nil))
	return &pe
}

// startBinary runs `offload sshd` as root with the environment's user,
// keys and the extra configuration lines, logging at DEBUG into a
// recorder, and stops it at the end.
func startBinary(t *testing.T, e *env, lines ...string) *server {
	t.Helper()
	bin := testenv.OffloadBinary(t)
	dir := t.TempDir()
	hostKey, pub := makeHostKey(t, dir)
	var rec *recorder
	t.Cleanup(func() { // after the server's stop
		if t.Failed() && rec != nil {
			t.Logf("offload sshd log (problems):\n%s", tail(problems(rec.since(0)), 4000))
		}
	})
	st := testenv.StartOnFreePort(t, func(port string) testenv.Launch {
		conf := filepath.Join(dir, "sshd_config")
		text := fmt.Sprintf("ListenAddress 127.0.0.1:%s\nHostKey %s\nAuthorizedKeysFile %s\nStrictModes no\nLogLevel DEBUG\n%s\n",
			port, hostKey, e.authKeys, strings.Join(lines, "\n"))
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		rec = &recorder{}
		lw := &lineRecorder{r: rec}
		cmd := exec.Command(bin, "sshd", "-D", "-f", conf, "-e", "-shutdown-timeout", "2s")
		cmd.Stdout, cmd.Stderr = lw, lw
		return testenv.Launch{Cmd: cmd, Output: lw, Listens: func() bool { return strings.Contains(lw.text(), "listening addr=127.0.0.1:"+port) }}
	})
	return &server{addr: "127.0.0.1:" + st.Port, port: st.Port, hostPubs: []ssh.PublicKey{pub}, log: rec}
}

// startOpenSSH runs OpenSSH's sshd on the same kind of configuration,
// or returns nil when it is not installed.
func startOpenSSH(t *testing.T, e *env, lines ...string) *server {
	t.Helper()
	const sshd = "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		if testenv.Required() {
			t.Fatalf("no OpenSSH sshd at %s", sshd)
		}
		t.Logf("no OpenSSH sshd at %s: not compared", sshd)
		return nil
	}
	os.MkdirAll("/run/sshd", 0o755) // its privilege separation directory
	dir := t.TempDir()
	hostKey, pub := makeHostKey(t, dir)
	n := 0
	st := testenv.StartOnFreePort(t, func(port string) testenv.Launch {
		n++
		// its PidFile, a path of this try alone, is written once it listens
		pidFile := filepath.Join(dir, "sshd."+strconv.Itoa(n)+".pid")
		conf := filepath.Join(dir, "sshd_config")
		text := fmt.Sprintf("ListenAddress 127.0.0.1:%s\nHostKey %s\nAuthorizedKeysFile %s\nStrictModes no\nUsePAM no\nPidFile %s\n%s\n",
			port, hostKey, e.authKeys, pidFile, strings.Join(lines, "\n"))
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		out := &lineRecorder{r: &recorder{}}
		cmd := exec.Command(sshd, "-D", "-e", "-f", conf)
		cmd.Stdout, cmd.Stderr = out, out
		return testenv.Launch{Cmd: cmd, Output: out, Listens: func() bool { return testenv.FileExists(pidFile) }}
	})
	return &server{addr: "127.0.0.1:" + st.Port, port: st.Port, hostPubs: []ssh.PublicKey{pub}}
}

func makeHostKey(t *testing.T, dir string) (string, ssh.PublicKey) {
	t.Helper()
	key := filepath.Join(dir, "host_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	b, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return key, pub
}

// lineRecorder turns the binary's text log lines (slog's key=value
// format) into records.
type lineRecorder struct {
	r   *recorder
	mu  sync.Mutex
	buf strings.Builder
	all strings.Builder
}

func (l *lineRecorder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.buf.Write(p)
	s := l.buf.String()
	i := strings.LastIndexByte(s, '\n')
	if i < 0 {
		return len(p), nil
	}
	l.buf.Reset()
	l.buf.WriteString(s[i+1:])
	sc := bufio.NewScanner(strings.NewReader(s[:i]))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rec, ok := parseLogLine(sc.Text()); ok {
			l.r.mu.Lock()
			l.r.records = append(l.r.records, rec)
			l.r.mu.Unlock()
		}
	}
	return len(p), nil
}

// String is the text written so far.
func (l *lineRecorder) String() string { return l.text() }

func (l *lineRecorder) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

var logAttrRE = regexp.MustCompile(`([A-Za-z0-9_.]+)=("(?:[^"\\]|\\.)*"|\S*)`)

// parseLogLine reads `time=… level=DEBUG msg="…" key=value …`.
func parseLogLine(line string) (record, bool) {
	rec := record{attrs: map[string]string{}}
	for _, m := range logAttrRE.FindAllStringSubmatch(line, -1) {
		v := m[2]
		if strings.HasPrefix(v, `"`) {
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
		}
		switch m[1] {
		case "msg":
			rec.msg = strings.TrimSuffix(v, " [preauth]") // a pre-auth worker's line, relayed
		case "level":
			var lv slog.Level
			lv.UnmarshalText([]byte(v))
			rec.level = lv
		default:
			rec.attrs[m[1]] = v
		}
	}
	return rec, rec.msg != ""
}
