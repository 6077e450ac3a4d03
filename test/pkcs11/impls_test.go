//go:build cgo && !nopkcs11

package pkcs11_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/provider/providertest"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/uri"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/test/hostile/harness"
)

// An implementation is a PKCS #11 module with a token the conformance
// suite and the host-key test run on. Each has its own semantics: SoftHSM
// offers everything in software; tpm2-pkcs11 on a software TPM signs with
// ECDSA and RSA in the TPM (flagged CKF_HW), has no AES-GCM, ECDH or
// Ed25519, and keeps its objects in a store of its own; p11-kit's client
// forwards a SoftHSM token over a socket, with the mechanisms its RPC can
// marshal.
type implementation struct {
	name  string
	token func(t *testing.T) string // a token URI with module-path and pin-source
}

var implementations = []implementation{
	{"softhsm", func(t *testing.T) string { return softhsmtest.NewToken(t, "impl-softhsm").TokenURI() }},
	{"tpm2-pkcs11", tpm2Token},
	{"p11-kit-client", p11KitToken},
}

// TestImplementations runs, on each implementation, the conformance suite
// (every algorithm the token offers; those it lacks are skipped, saying
// which mechanism is missing) and an SSH handshake whose host key lives
// in the token.
func TestImplementations(t *testing.T) {
	for _, im := range implementations {
		t.Run(im.name, func(t *testing.T) {
			ref := im.token(t)
			p, err := pkcs11.OpenURI(ref, pkcs11.Config{HealthInterval: -1, MaxSessions: 64})
			if err != nil {
				t.Fatalf("open %s: %v", im.name, err)
			}
			defer p.Close()
			t.Run("conformance", func(t *testing.T) {
				providertest.TestProvider(t, p)
				for _, m := range pkcs11.Mappings() {
					if !provider.Supports(p, m.Algorithm, 0) {
						t.Run(m.Algorithm, func(t *testing.T) {
							t.Skipf("%s: the token does not offer %s (or its key size)", im.name, m.Mechanism)
						})
					}
				}
			})
			t.Run("hostkey", func(t *testing.T) { hostKeyOn(t, p, ref) })
		})
	}
}

// hostKeyOn serves SSH with an ECDSA P-256 host key generated in the
// token (every implementation has CKM_ECDSA) and checks a client sees
// that key.
// implHostKeys numbers the host keys hostKeyOn generates.
var implHostKeys atomic.Int64

func hostKeyOn(t *testing.T, p *pkcs11.Provider, tokenRef string) {
	u := uri.MustParse(tokenRef)
	// The software TPM lives as long as the test binary, so a key of an
	// earlier run (go test -count=N) is still in its store.
	u.Object = fmt.Sprintf("impl-host-%d", implHostKeys.Add(1))
	keyRef := u.Full()
	if _, err := p.Generate(context.Background(), keyRef, pkcs11.ECDSAP256); err != nil {
		t.Fatalf("generate the host key: %v", err)
	}
	reg := harness.Registry(t)
	if err := reg.Register(p); err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	key, err := reg.Signer(context.Background(), keyRef)
	if err != nil {
		t.Fatal(err)
	}
	if pv, _ := provider.ProvenanceOf(key); pv.Token == "" {
		t.Fatalf("host key provenance %+v: not on the token", pv)
	}
	pub, err := ssh.NewPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	srv := harness.Start(t, func(c *sshd.Config) {
		c.Registry = reg
		c.HostKeys = []crypto.Signer{key}
	})
	cfg := srv.ClientConfig()
	cfg.HostKeyCallback = ssh.FixedHostKey(pub)
	cfg.HostKeyAlgorithms = []string{pub.Type()}
	c, err := ssh.Dial("tcp", srv.Addr, cfg)
	if err != nil {
		t.Fatalf("handshake with the host key in the token: %v", err)
	}
	c.Close()
}

// p11KitToken is a SoftHSM token reached through p11-kit-client.so.
func p11KitToken(t *testing.T) string {
	client := testenv.FirstFile(t, "p11-kit-client.so", "apt-get install p11-kit-modules", p11KitClientPaths...)
	tok := softhsmtest.NewToken(t, "impl-p11kit")
	startP11KitServer(t, tok)
	return (&uri.URI{Token: tok.Label, ModulePath: client, PINSource: tok.PINFile}).Full()
}

var tpm2Modules = []string{
	"/usr/lib/x86_64-linux-gnu/pkcs11/libtpm2_pkcs11.so",
	"/usr/lib/aarch64-linux-gnu/pkcs11/libtpm2_pkcs11.so",
	"/usr/lib/x86_64-linux-gnu/libtpm2_pkcs11.so.1",
	"/usr/lib64/pkcs11/libtpm2_pkcs11.so",
}

const tpm2Hint = "apt-get install swtpm swtpm-tools tpm2-tools tpm2-abrmd libtss2-tcti-tabrmd0 libtpm2-pkcs11-1 libtpm2-pkcs11-tools dbus-daemon"

// tpm is the software TPM of this test binary: swtpm behind the
// tpm2-abrmd resource manager on a private D-Bus, and a tpm2-pkcs11
// store with one token. tpm2-pkcs11 reads its store and TCTI from the
// environment when the module is initialized, once per process, so one
// TPM serves every test of the binary; TestMain stops it.
var tpm struct {
	once  sync.Once
	err   error
	dir   string
	uri   string
	procs []*exec.Cmd
}

func tpm2Token(t *testing.T) string {
	module := testenv.FirstFile(t, "libtpm2_pkcs11.so", tpm2Hint, tpm2Modules...)
	for _, tool := range []string{"swtpm", "dbus-daemon", "tpm2_ptool"} {
		testenv.LookPath(t, tool, tpm2Hint)
	}
	abrmd := testenv.FirstFile(t, "tpm2-abrmd", tpm2Hint, "/usr/sbin/tpm2-abrmd", "/usr/bin/tpm2-abrmd")
	tpm.once.Do(func() { tpm.err = startTPM(t, module, abrmd) })
	if tpm.err != nil {
		t.Fatalf("software TPM: %v", tpm.err)
	}
	return tpm.uri
}

func startTPM(t testing.TB, module, abrmdPath string) error {
	dir, err := os.MkdirTemp("", "offload-swtpm-")
	if err != nil {
		return err
	}
	tpm.dir = dir
	sock := filepath.Join(dir, "sock")
	// swtpm on Unix sockets (the TCTI wants the control socket at sock.ctrl).
	sw := exec.Command("swtpm", "socket", "--tpm2", "--tpmstate", "dir="+dir, "--server", "type=unixio,path="+sock,
		"--ctrl", "type=unixio,path="+sock+".ctrl", "--flags", "not-need-init,startup-clear")
	if err := startProc(t, sw, sock+".ctrl"); err != nil {
		return fmt.Errorf("swtpm: %w", err)
	}
	// A private session bus for the resource manager: without one, a TPM
	// runs out of object slots in the middle of tpm2_ptool's commands.
	bus := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address=1", "--address=unix:path="+filepath.Join(dir, "bus"))
	out, err := bus.StdoutPipe()
	if err != nil {
		return err
	}
	if err := bus.Start(); err != nil {
		return fmt.Errorf("dbus-daemon: %w", err)
	}
	tpm.procs = append(tpm.procs, bus)
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("dbus-daemon printed no address: %w", err)
	}
	os.Setenv("DBUS_SESSION_BUS_ADDRESS", strings.TrimSpace(addr))
	name := fmt.Sprintf("com.intel.tss2.Tabrmd.offload%d", os.Getpid())
	abrmd := exec.Command(abrmdPath, "--session", "--allow-root", "--dbus-name="+name, "--tcti=swtpm:path="+sock)
	var abrmdOut bytes.Buffer
	abrmd.Stdout, abrmd.Stderr = &abrmdOut, &abrmdOut
	if err := abrmd.Start(); err != nil {
		return fmt.Errorf("tpm2-abrmd: %w", err)
	}
	tpm.procs = append(tpm.procs, abrmd)
	tcti := "tabrmd:bus_type=session,bus_name=" + name
	os.Setenv("TPM2TOOLS_TCTI", tcti)
	os.Setenv("TPM2_PKCS11_TCTI", tcti)
	os.Setenv("TPM2_PKCS11_STORE", dir)
	os.Setenv("TSS2_LOG", "all+NONE")
	os.Setenv("TPM2_PKCS11_LOG_LEVEL", "0")
	pin := "tpm-user-4711"
	var lastErr error
	for deadline := testenv.StartupDeadline(t); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if lastErr = ptool(dir, "init"); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		return fmt.Errorf("tpm2_ptool init: %w (tpm2-abrmd: %s)", lastErr, abrmdOut.String())
	}
	if err := ptool(dir, "addtoken", "--pid=1", "--sopin=tpm-so-4711", "--userpin="+pin, "--label=impl-tpm2"); err != nil {
		return fmt.Errorf("tpm2_ptool addtoken: %w", err)
	}
	pinFile := filepath.Join(dir, "pin")
	if err := os.WriteFile(pinFile, []byte(pin+"\n"), 0o600); err != nil {
		return err
	}
	tpm.uri = (&uri.URI{Token: "impl-tpm2", ModulePath: module, PINSource: pinFile}).Full()
	return nil
}

// startProc starts cmd and waits until the file ready exists.
func startProc(t testing.TB, cmd *exec.Cmd, ready string) error {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	tpm.procs = append(tpm.procs, cmd)
	if testenv.WaitUntil(t, func() bool { _, err := os.Stat(ready); return err == nil }) {
		return nil
	}
	return fmt.Errorf("not ready before the deadline: %s", out.String())
}

// ptool runs tpm2_ptool on the store (the PINs are throwaway test values).
func ptool(dir string, args ...string) error {
	cmd := exec.Command("tpm2_ptool", append([]string{args[0], "--path", dir}, args[1:]...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("%v: %s", err, lines[len(lines)-1])
	}
	return nil
}

// stopTPM ends the software TPM's processes and removes its state.
func stopTPM() {
	for i := len(tpm.procs) - 1; i >= 0; i-- {
		tpm.procs[i].Process.Kill()
		tpm.procs[i].Wait()
	}
	if tpm.dir != "" {
		os.RemoveAll(tpm.dir)
	}
}
