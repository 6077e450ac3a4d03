// Package softhsm is the implementation of the public test kit
// providers/pkcs11/pkcs11test (see its documentation): throwaway SoftHSM
// tokens, their configurations and PIN files. It does not import the
// PKCS #11 provider, so the provider's own tests can use it.
package softhsm

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// ErrMissing is wrapped by Start's error when SoftHSM is not installed.
var ErrMissing = errors.New("softhsm: SoftHSM is not installed")

// Token is a SoftHSM token made for a test.
type Token struct {
	Label    string
	PIN      string // the user PIN, also in PINFile
	SOPIN    string
	Module   string // path of libsofthsm2.so
	PINFile  string // holds PIN (mode 0600); URIs name it as pin-source
	Dir      string // the token's own temporary directory
	ConfPath string // the SoftHSM configuration it lives in (SOFTHSM2_CONF)

	env    *env
	ownDir bool // Dir is removed by Close (Start's); NewToken's by the test
	closed atomic.Bool
}

// Option changes how NewToken and Start make a token.
type Option func(*Token)

// WithLabel sets the token's label (at most 32 bytes). It must be unique
// among the tokens alive at once.
func WithLabel(label string) Option { return func(t *Token) { t.Label = label } }

// WithPIN sets the user PIN.
func WithPIN(pin string) Option { return func(t *Token) { t.PIN = pin } }

// Missing says what of SoftHSM is not installed, or "" when it all is.
func Missing() string {
	if _, err := exec.LookPath("softhsm2-util"); err != nil {
		return "softhsm2-util (" + hint + ")"
	}
	if modulePath() == "" {
		return "libsofthsm2.so (" + hint + ")"
	}
	return ""
}

func modulePath() string {
	for _, p := range ModulePaths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

var labels atomic.Uint64

// NewToken makes a fresh token for t and deletes it when t ends. Without
// WithLabel the label is made from the test's name and is unique.
func NewToken(t testing.TB, opts ...Option) *Token {
	t.Helper()
	testenv.FirstFile(t, "libsofthsm2.so", hint, ModulePaths...)
	testenv.LookPath(t, "softhsm2-util", hint)
	dir := t.TempDir()
	tok, err := start(dir, defaultLabel(t.Name()), opts)
	if err != nil {
		t.Fatalf("softhsm: %v", err)
	}
	t.Cleanup(func() {
		if err := tok.Close(); err != nil {
			t.Errorf("softhsm: %v", err)
		}
	})
	return tok
}

// Start is NewToken for Example and TestMain functions, which have no
// testing.TB: it fails with ErrMissing when SoftHSM is not installed, and
// the caller deletes the token with Close.
func Start(opts ...Option) (*Token, error) {
	if m := Missing(); m != "" {
		return nil, fmt.Errorf("%w: %s is missing", ErrMissing, m)
	}
	dir, err := os.MkdirTemp("", "softhsm-token-")
	if err != nil {
		return nil, err
	}
	tok, err := start(dir, defaultLabel("example"), opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	tok.ownDir = true
	return tok, nil
}

var nonLabel = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func defaultLabel(name string) string {
	n := labels.Add(1)
	base := strings.Trim(nonLabel.ReplaceAllString(name, "-"), "-")
	suffix := fmt.Sprintf("-%d", n)
	return base[:min(len(base), 32-len(suffix))] + suffix
}

func start(dir, label string, opts []Option) (*Token, error) {
	tok := &Token{Label: label, PIN: PIN, SOPIN: SOPIN, Module: modulePath(), Dir: dir, PINFile: filepath.Join(dir, "pin")}
	for _, o := range opts {
		o(tok)
	}
	if len(tok.Label) > 32 {
		return nil, fmt.Errorf("token label %q is longer than 32 bytes", tok.Label)
	}
	if err := os.WriteFile(tok.PINFile, []byte(tok.PIN+"\n"), 0o600); err != nil {
		return nil, err
	}
	e, err := joinEnv()
	if err != nil {
		return nil, err
	}
	tok.env, tok.ConfPath = e, e.conf
	tok.deleteQuiet()
	if err := tok.init(); err != nil {
		e.leave()
		return nil, err
	}
	return tok, nil
}

// Close deletes the token (and, for the last token of its SoftHSM
// configuration, the configuration). It may be called more than once.
func (tok *Token) Close() error {
	if tok.closed.Swap(true) {
		return nil
	}
	tok.deleteQuiet()
	tok.env.leave()
	if tok.ownDir {
		return os.RemoveAll(tok.Dir)
	}
	return nil
}

// Environ is the environment a subprocess needs to see the token.
func (tok *Token) Environ() []string { return []string{"SOFTHSM2_CONF=" + tok.ConfPath} }

// TokenURI is the URI of the token, with module-path and pin-source.
func (tok *Token) TokenURI() string { return tok.URI("") }

// URI is the URI of an object on the token (object == "": the token
// itself), with module-path and pin-source (never pin-value).
func (tok *Token) URI(object string) string {
	return (&uri.URI{Token: tok.Label, Object: object, ModulePath: tok.Module, PINSource: tok.PINFile}).Full()
}

// Import stores key (anything x509.MarshalPKCS8PrivateKey takes) on the
// token labelled object, with softhsm2-util — from outside the test
// process, as an administrator restoring a backup would — and returns its
// URI. The key gets CKA_ID 01.
func (tok *Token) Import(t testing.TB, key crypto.PrivateKey, object string) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("softhsm: %v", err)
	}
	file := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatalf("softhsm: %v", err)
	}
	if _, err := tok.env.run("--import", file, "--token", tok.Label, "--label", object, "--id", "01", "--pin", tok.PIN); err != nil {
		t.Fatalf("softhsm: %v", err)
	}
	return tok.URI(object)
}

// Delete removes the token, as pulling a device out would, even while a
// process has it open.
func (tok *Token) Delete(t testing.TB) {
	t.Helper()
	if err := tok.delete(); err != nil {
		t.Fatalf("softhsm: %v", err)
	}
}

// delete removes the token. softhsm2-util removes the token's files, then
// its directory; a process using the token can create a lock file in the
// directory in between, and the removal of the directory then fails
// although the token is gone. That is finished here.
func (tok *Token) delete() error {
	_, err := tok.env.run("--delete-token", "--token", tok.Label)
	if err == nil {
		return nil
	}
	dir := ""
	if _, d, ok := strings.Cut(err.Error(), "Could not delete the directory: "); ok {
		dir = strings.TrimSpace(strings.SplitN(d, "\n", 2)[0])
	}
	if dir == "" || !strings.HasPrefix(dir, tok.env.tokens+string(filepath.Separator)) {
		return err
	}
	if _, statErr := os.Stat(filepath.Join(dir, "token.object")); statErr == nil {
		return err // the token itself is still there
	}
	return os.RemoveAll(dir)
}

// Recreate makes the token again, empty, after Delete: a new serial, the
// same label and PINs.
func (tok *Token) Recreate(t testing.TB) {
	t.Helper()
	if err := tok.init(); err != nil {
		t.Fatalf("softhsm: %v", err)
	}
}

// InitTokenOnly makes the token again after Delete the way an
// administrator's tool does in two steps, and stops after the first: the
// token is initialized (its label, serial and SO PIN) and its user PIN is
// not set yet. InitUserPIN is the second step. Both run OpenSC's
// pkcs11-tool.
func (tok *Token) InitTokenOnly(t testing.TB) {
	t.Helper()
	slots, err := tok.env.run("--show-slots")
	if err != nil {
		t.Fatalf("softhsm: %v", err)
	}
	slot, ok := freeSlot(slots)
	if !ok {
		t.Fatalf("softhsm: no free slot in:\n%s", slots)
	}
	tok.pkcs11Tool(t, "--init-token", "--slot", slot, "--init-token", "--label", tok.Label, "--so-pin", tok.SOPIN)
}

// InitUserPIN sets the user PIN of a token InitTokenOnly made.
func (tok *Token) InitUserPIN(t testing.TB) {
	t.Helper()
	tok.pkcs11Tool(t, "--init-pin", "--token-label", tok.Label, "--login", "--login-type", "so", "--so-pin", tok.SOPIN,
		"--init-pin", "--new-pin", tok.PIN)
}

// pkcs11Tool runs pkcs11-tool on the token's module with args; step
// names the run in an error (the arguments hold PINs).
func (tok *Token) pkcs11Tool(t testing.TB, step string, args ...string) {
	t.Helper()
	bin := testenv.LookPath(t, "pkcs11-tool", "Debian package opensc")
	utilMu.Lock()
	defer utilMu.Unlock()
	cmd := exec.Command(bin, append([]string{"--module", tok.Module}, args...)...)
	cmd.Env = append(os.Environ(), "SOFTHSM2_CONF="+tok.env.conf)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pkcs11-tool %s: %v: %s", step, err, out)
	}
}

// freeSlot finds, in --show-slots output, the number of a slot whose
// token is not initialized.
func freeSlot(showSlots string) (string, bool) {
	slot := ""
	for _, line := range strings.Split(showSlots, "\n") {
		key, val, colon := strings.Cut(strings.TrimSpace(line), ":")
		if n, ok := strings.CutPrefix(key, "Slot "); ok && !colon {
			slot = n
		}
		if key == "Initialized" && strings.TrimSpace(val) == "no" && slot != "" {
			return slot, true
		}
	}
	return "", false
}

// init makes the token. softhsm2-util looks the new token up again after
// creating it, and a process reading the token directory at that moment
// can make the lookup fail: then the half-made token is removed and the
// creation tried again.
func (tok *Token) init() error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		_, err = tok.env.run("--init-token", "--free", "--label", tok.Label, "--pin", tok.PIN, "--so-pin", tok.SOPIN)
		if err == nil || tok.ready() {
			return nil
		}
		tok.deleteQuiet()
		time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
	}
	return err
}

// ready reports whether the token exists with its user PIN set. A failed
// --init-token may have made the token and failed only in the report it
// prints after (reading another slot a process had busy): deleting that
// token and making it again would pull it from under a process that had
// already seen it.
func (tok *Token) ready() bool {
	out, err := tok.env.run("--show-slots")
	if err != nil {
		return false
	}
	return pinSet(out, tok.Label)
}

// pinSet finds, in --show-slots output, the token labelled label and
// reports whether its user PIN is initialized.
func pinSet(showSlots, label string) bool {
	pin := false
	for _, line := range strings.Split(showSlots, "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		val = strings.TrimSpace(val)
		switch {
		case !ok:
		case key == "User PIN init.":
			pin = val == "yes"
		case key == "Label" && val == label:
			return pin
		}
	}
	return false
}

func (tok *Token) deleteQuiet() { _ = tok.delete() }

// env is one SoftHSM configuration and the tokens alive in it.
type env struct {
	dir, conf, tokens string
	refs              int    // guarded by envMu
	prev              string // SOFTHSM2_CONF before, restored by the last leave
	hadPrev           bool
}

var (
	envMu   sync.Mutex
	current *env
	utilMu  sync.Mutex // serializes softhsm2-util runs
)

// joinEnv returns the live configuration, or makes one.
func joinEnv() (*env, error) {
	envMu.Lock()
	defer envMu.Unlock()
	if current != nil {
		current.refs++
		return current, nil
	}
	dir, err := os.MkdirTemp("", "softhsm-conf-")
	if err != nil {
		return nil, err
	}
	e := &env{dir: dir, conf: filepath.Join(dir, "softhsm2.conf"), tokens: filepath.Join(dir, "tokens"), refs: 1}
	if err := os.MkdirAll(e.tokens, 0o700); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf("directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n", e.tokens)
	if err := os.WriteFile(e.conf, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	e.prev, e.hadPrev = os.LookupEnv("SOFTHSM2_CONF")
	if err := os.Setenv("SOFTHSM2_CONF", e.conf); err != nil {
		return nil, err
	}
	current = e
	return e, nil
}

func (e *env) leave() {
	envMu.Lock()
	defer envMu.Unlock()
	e.refs--
	if e.refs > 0 {
		return
	}
	if current == e {
		current = nil
	}
	if e.hadPrev {
		os.Setenv("SOFTHSM2_CONF", e.prev)
	} else {
		os.Unsetenv("SOFTHSM2_CONF")
	}
	os.RemoveAll(e.dir)
}

func (e *env) run(args ...string) (string, error) {
	utilMu.Lock()
	defer utilMu.Unlock()
	util, err := exec.LookPath("softhsm2-util")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(util, args...)
	cmd.Env = append(os.Environ(), "SOFTHSM2_CONF="+e.conf)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("softhsm2-util %s: %v: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
