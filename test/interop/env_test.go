package interop_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/software"
)

// payloadSize is what each upload sends: big enough for several packets
// and, in the rekey cells, several key exchanges (rekeyBytes).
const payloadSize = 1 << 20

// rekeyBytes is the rekey limit of the rekey cells (TestRekeyLimit sets
// its own while it runs; nothing runs beside it).
var rekeyBytes uint64 = 256 << 10

// env is what every cell shares: the account the clients log in to, the
// client keys, the payload and the host keys.
type env struct {
	root     string // world-searchable, removed at the end
	home     string // the account's home: the remote side of every transfer
	user     string
	uid, gid int
	shared   bool // the account is the test's own (not root): no throwaway user

	key, rsaKey  string // OpenSSH private keys (ed25519, rsa-3072)
	keyPPK       string // key in PuTTY's format, when puttygen exists
	rsaKeyPPK    string
	authKeys     string // authorized_keys with both public keys
	payload, sum string // a random file and its SHA-256

	reg        *provider.Registry // cpu + software, for file host keys
	fileKeys   []crypto.Signer
	tokenReg   *provider.Registry // with the SoftHSM token, nil without
	tokenKeys  []crypto.Signer
	tokenErr   string // why there are no token keys
	sftpHelper []string
}

// newEnv makes the environment, and removes it when t ends.
func newEnv(t *testing.T) *env {
	t.Helper()
	root, err := os.MkdirTemp("", "offload-interop-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &env{root: root, home: filepath.Join(root, "home")}
	e.account(t)
	e.clientKeys(t)
	e.makePayload(t)
	e.hostKeys(t)
	e.tokenHostKeys(t)
	return e
}

// account creates, as root, a throwaway user whose shell is /bin/sh (a
// login shell that sources a developer's ~/.bashrc costs most of a second
// per command); otherwise it uses the test's own account.
func (e *env) account(t *testing.T) {
	if err := os.Mkdir(e.home, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		u, err := user.Current()
		if err != nil {
			t.Fatal(err)
		}
		e.user, e.shared = u.Username, true
		e.uid, e.gid = os.Getuid(), os.Getgid()
		return
	}
	// -p '*': no password, but not a locked account (sshd refuses those).
	u := testenv.AddUser(t, "-M", "-N", "-d", e.home, "-s", "/bin/sh", "-p", "*")
	e.user = u.Username
	e.uid, _ = strconv.Atoi(u.Uid)
	e.gid, _ = strconv.Atoi(u.Gid)
	if err := os.Chown(e.home, e.uid, e.gid); err != nil {
		t.Fatal(err)
	}
	// internal-sftp runs in a child as the user: it must be able to run
	// this test binary, so a copy goes where the user can reach it.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(e.root, "sftp-helper")
	if err := copyFile(exe, helper, 0o755); err != nil {
		t.Fatal(err)
	}
	e.sftpHelper = []string{"/usr/bin/env", helperEnv + "=1", helper}
}

// remoteDir makes a directory under the account's home for one cell.
func (e *env) remoteDir(t *testing.T, name string) string {
	d := filepath.Join(e.home, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if !e.shared {
		for p := d; p != e.home; p = filepath.Dir(p) {
			if err := os.Chown(p, e.uid, e.gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	return d
}

func (e *env) clientKeys(t *testing.T) {
	keygen := testenv.LookPath(t, "ssh-keygen", "apt-get install openssh-client")
	dir := filepath.Join(e.root, "keys")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	e.key, e.rsaKey = filepath.Join(dir, "id_ed25519"), filepath.Join(dir, "id_rsa")
	var auth []byte
	for _, k := range []struct{ path, typ string }{{e.key, "ed25519"}, {e.rsaKey, "rsa"}} {
		// PEM for RSA: the format every client here reads.
		args := []string{"-q", "-t", k.typ, "-N", "", "-f", k.path}
		if k.typ == "rsa" {
			args = append(args, "-b", "3072", "-m", "PEM")
		}
		if out, err := exec.Command(keygen, args...).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
		pub, err := os.ReadFile(k.path + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		auth = append(auth, pub...)
	}
	// The user's own file, as sshd reads it with the user's permissions.
	sshDir := filepath.Join(e.home, ".ssh")
	if err := os.Mkdir(sshDir, 0o700); err != nil {
		t.Fatal(err)
	}
	e.authKeys = filepath.Join(sshDir, "authorized_keys")
	if err := os.WriteFile(e.authKeys, auth, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.chownTree(sshDir); err != nil {
		t.Fatal(err)
	}
	if puttygen, err := exec.LookPath("puttygen"); err == nil {
		e.keyPPK, e.rsaKeyPPK = e.key+".ppk", e.rsaKey+".ppk"
		for src, dst := range map[string]string{e.key: e.keyPPK, e.rsaKey: e.rsaKeyPPK} {
			if out, err := exec.Command(puttygen, src, "-O", "private", "-o", dst).CombinedOutput(); err != nil {
				t.Fatalf("puttygen: %v\n%s", err, out)
			}
		}
	}
}

func (e *env) makePayload(t *testing.T) {
	e.payload = filepath.Join(e.root, "payload")
	b := make([]byte, payloadSize)
	rand.Read(b)
	if err := os.WriteFile(e.payload, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	e.sum = hex.EncodeToString(s[:])
}

func (e *env) hostKeys(t *testing.T) {
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e.fileKeys = []crypto.Signer{ed, p256, p384, p521, rk}
	e.reg = provider.New(provider.Config{})
	t.Cleanup(func() { e.reg.Close() })
	for _, p := range []provider.Provider{cpu.New(cpu.Detect()), software.New()} {
		if err := e.reg.Register(p); err != nil {
			t.Fatal(err)
		}
	}
}

// tokenHostKeys makes one host key of each type in a throwaway SoftHSM
// token. Without SoftHSM (or cgo) the token cells are reported missing
// by the cells themselves.
func (e *env) tokenHostKeys(t *testing.T) {
	if !pkcs11.Available {
		e.tokenErr = "PKCS #11 support (built without cgo)"
		return
	}
	if m := softhsmtest.Missing(); m != "" {
		e.tokenErr = m
		return
	}
	tok := softhsmtest.NewToken(t, "interop")
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e.tokenReg = provider.New(provider.Config{})
	t.Cleanup(func() { e.tokenReg.Close() })
	for _, pr := range []provider.Provider{cpu.New(cpu.Detect()), p, software.New()} {
		if err := e.tokenReg.Register(pr); err != nil {
			t.Fatal(err)
		}
	}
	for _, kt := range []pkcs11.KeyType{pkcs11.Ed25519, pkcs11.ECDSAP256, pkcs11.ECDSAP384, pkcs11.RSA2048} {
		ref := tok.URI("host-" + string(kt))
		if _, err := p.Generate(context.Background(), ref, kt); err != nil {
			t.Fatalf("generate %s in the token: %v", kt, err)
		}
		s, err := e.tokenReg.Signer(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		e.tokenKeys = append(e.tokenKeys, s)
	}
}

const certSuffix = "-cert-v01@openssh.com"

// hostCert certifies k as a host key for 127.0.0.1, signed by a CA made
// for the test.
func hostCert(k crypto.Signer) (*ssh.Certificate, error) {
	_, caKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	ca, err := ssh.NewSignerFromSigner(caKey)
	if err != nil {
		return nil, err
	}
	pub, err := ssh.NewPublicKey(k.Public())
	if err != nil {
		return nil, err
	}
	c := &ssh.Certificate{Key: pub, CertType: ssh.HostCert, KeyId: "interop", ValidPrincipals: []string{"127.0.0.1"},
		ValidBefore: ssh.CertTimeInfinity}
	return c, c.SignCert(rand.Reader, ca)
}

// keyFor returns the signer among keys whose SSH type can make the
// host-key signature algorithm alg.
func keyFor(keys []crypto.Signer, alg string) (crypto.Signer, error) {
	alg = strings.TrimSuffix(alg, certSuffix)
	want := alg
	if alg == "rsa-sha2-256" || alg == "rsa-sha2-512" {
		want = ssh.KeyAlgoRSA
	}
	for _, k := range keys {
		pub, err := ssh.NewPublicKey(k.Public())
		if err == nil && pub.Type() == want {
			return k, nil
		}
	}
	return nil, fmt.Errorf("no %s key", want)
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// fileSum is the hex SHA-256 of a file.
func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
