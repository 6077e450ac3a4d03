// Package softhsmtest makes throwaway SoftHSM tokens for tests.
//
// # One configuration per test binary
//
// SoftHSM reads SOFTHSM2_CONF once, at C_Initialize, and offload calls
// C_Initialize once per module per process. So every test binary gets one
// SoftHSM configuration and token directory, made on first use (in a temp
// dir, SOFTHSM2_CONF set for the whole process), and each test adds its own
// tokens to it with NewToken. A token is deleted when its test ends.
//
// SoftHSM only sees tokens created after C_Initialize once it is
// initialized again. The PKCS #11 provider does that by itself when a token
// it is asked for is missing and the module was already in use; tests that
// close their providers before the next test starts never notice.
//
// # Missing tools
//
// Without softhsm2-util or libsofthsm2.so, NewToken skips the test (or
// fails it when OFFLOAD_REQUIRE_TOOLS=1, as in CI), through internal/testenv.
//
// PINs are throwaway values passed to softhsm2-util on its command line
// (it cannot read them from a pipe); tests reach tokens with pin-source
// files, so PINs appear in no URI, log or test output.
package softhsmtest

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// ModulePaths are the places libsofthsm2.so is looked for, in order.
var ModulePaths = []string{
	"/usr/lib/softhsm/libsofthsm2.so",
	"/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
	"/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
	"/usr/lib64/pkcs11/libsofthsm2.so",
	"/usr/local/lib/softhsm/libsofthsm2.so",
	"/opt/homebrew/lib/softhsm/libsofthsm2.so",
}

const hint = "install softhsm2 (apt-get install softhsm2)"

// Default PINs of the tokens NewToken makes.
const (
	PIN   = "4711-user"
	SOPIN = "4711-so"
)

// Env is the test binary's SoftHSM configuration.
type Env struct {
	Module   string // path of libsofthsm2.so
	Util     string // path of softhsm2-util
	Dir      string // holds the configuration and the token directory
	ConfPath string // SOFTHSM2_CONF
	TokenDir string
}

var (
	envOnce sync.Once
	env     *Env
	envErr  error
	mu      sync.Mutex // serializes softhsm2-util runs
)

// Setup returns the test binary's SoftHSM configuration, making it on
// first use, or skips/fails t when SoftHSM is missing.
func Setup(t testing.TB) *Env {
	t.Helper()
	module := testenv.FirstFile(t, "libsofthsm2.so", hint, ModulePaths...)
	util := testenv.LookPath(t, "softhsm2-util", hint)
	e, err := setup(module, util)
	if err != nil {
		t.Fatalf("softhsmtest: %v", err)
	}
	return e
}

// Missing says what of SoftHSM is not installed, or "" when it all is.
func Missing() string {
	if _, err := exec.LookPath("softhsm2-util"); err != nil {
		return "softhsm2-util (" + hint + ")"
	}
	for _, p := range ModulePaths {
		if _, err := os.Stat(p); err == nil {
			return ""
		}
	}
	return "libsofthsm2.so (" + hint + ")"
}

// NewTokenMain is NewToken for TestMain and Example functions, which have
// no *testing.T: it returns an error when SoftHSM is missing, and a
// function that deletes the token.
func NewTokenMain(label string) (*Token, func(), error) {
	if m := Missing(); m != "" {
		return nil, nil, fmt.Errorf("softhsmtest: %s is missing", m)
	}
	util, _ := exec.LookPath("softhsm2-util")
	module := ""
	for _, p := range ModulePaths {
		if _, err := os.Stat(p); err == nil {
			module = p
			break
		}
	}
	e, err := setup(module, util)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "offload-token-")
	if err != nil {
		return nil, nil, err
	}
	tok := &Token{Env: e, Module: e.Module, Label: label, PIN: PIN, SOPIN: SOPIN, Dir: dir, ConfPath: e.ConfPath,
		PINFile: filepath.Join(dir, "pin")}
	cleanup := func() { tok.deleteQuiet(); os.RemoveAll(dir) }
	if err := os.WriteFile(tok.PINFile, []byte(tok.PIN+"\n"), 0o600); err != nil {
		cleanup()
		return nil, nil, err
	}
	tok.deleteQuiet()
	if err := tok.init(); err != nil {
		cleanup()
		return nil, nil, err
	}
	return tok, cleanup, nil
}

func setup(module, util string) (*Env, error) {
	envOnce.Do(func() {
		dir, err := os.MkdirTemp("", "offload-softhsm-")
		if err != nil {
			envErr = err
			return
		}
		e := &Env{Module: module, Util: util, Dir: dir, ConfPath: filepath.Join(dir, "softhsm2.conf"),
			TokenDir: filepath.Join(dir, "tokens")}
		if err := os.MkdirAll(e.TokenDir, 0o700); err != nil {
			envErr = err
			return
		}
		conf := fmt.Sprintf("directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n", e.TokenDir)
		if err := os.WriteFile(e.ConfPath, []byte(conf), 0o600); err != nil {
			envErr = err
			return
		}
		envErr = os.Setenv("SOFTHSM2_CONF", e.ConfPath)
		env = e
	})
	return env, envErr
}

// Token is a SoftHSM token made for one test.
type Token struct {
	Env      *Env
	Module   string
	Label    string
	PIN      string
	SOPIN    string
	PINFile  string // holds PIN; URIs name it as pin-source
	Dir      string // the test's temp dir
	ConfPath string
}

// NewToken makes a fresh token labelled label (which must be unique among
// the tokens alive at once in this test binary) and deletes it when the
// test ends.
func NewToken(t testing.TB, label string) *Token {
	t.Helper()
	e := Setup(t)
	tok := &Token{Env: e, Module: e.Module, Label: label, PIN: PIN, SOPIN: SOPIN, Dir: t.TempDir(), ConfPath: e.ConfPath}
	tok.PINFile = filepath.Join(tok.Dir, "pin")
	if err := os.WriteFile(tok.PINFile, []byte(tok.PIN+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok.deleteQuiet() // left over from an earlier test that died
	if err := tok.init(); err != nil {
		t.Fatalf("softhsmtest: %v", err)
	}
	t.Cleanup(tok.deleteQuiet)
	return tok
}

func (tok *Token) init() error {
	_, err := tok.Env.run("--init-token", "--free", "--label", tok.Label, "--pin", tok.PIN, "--so-pin", tok.SOPIN)
	return err
}

// Recreate makes the token again, empty, after Delete (a new serial, the
// same label and PINs).
func (tok *Token) Recreate(t testing.TB) {
	t.Helper()
	if err := tok.init(); err != nil {
		t.Fatalf("softhsmtest: %v", err)
	}
}

// Delete removes the token, as pulling a device out would, even while a
// process has it open.
func (tok *Token) Delete(t testing.TB) {
	t.Helper()
	if _, err := tok.Env.run("--delete-token", "--token", tok.Label); err != nil {
		t.Fatalf("softhsmtest: %v", err)
	}
}

// Import stores key (any key x509.MarshalPKCS8PrivateKey takes) on the
// token under label with softhsm2-util, from outside the test process, as
// an administrator restoring a token from a backup would.
func (tok *Token) Import(t testing.TB, key crypto.PrivateKey, label string) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("softhsmtest: %v", err)
	}
	file := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatalf("softhsmtest: %v", err)
	}
	if _, err := tok.Env.run("--import", file, "--token", tok.Label, "--label", label, "--id", "01", "--pin", tok.PIN); err != nil {
		t.Fatalf("softhsmtest: %v", err)
	}
}

func (tok *Token) deleteQuiet() { _, _ = tok.Env.run("--delete-token", "--token", tok.Label) }

func (e *Env) run(args ...string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	cmd := exec.Command(e.Util, args...)
	cmd.Env = append(os.Environ(), "SOFTHSM2_CONF="+e.ConfPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("softhsm2-util %s: %v: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// TokenURI is the URI of the token, with module-path and pin-source.
func (tok *Token) TokenURI() string { return tok.URI("") }

// URI is the URI of an object on the token (object == "": the token
// itself), with module-path and pin-source (never pin-value).
func (tok *Token) URI(object string) string {
	u := &uri.URI{Token: tok.Label, Object: object, ModulePath: tok.Module, PINSource: tok.PINFile}
	return u.String()
}
