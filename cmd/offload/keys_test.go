//go:build cgo && !nopkcs11

package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/internal/softhsmtest"
	"golang.org/x/crypto/ssh"
)

func runKeys(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := cmdKeys(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestKeysCommand(t *testing.T) {
	tok := softhsmtest.NewToken(t, "cli")
	ref := tok.URI("host-ed")

	out, _, err := runKeys(t, "generate", "-type", "ed25519", ref)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	pubLine, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(out))
	if err != nil || pubLine.Type() != "ssh-ed25519" || len(rest) != 0 {
		t.Fatalf("generate printed %q: %v", out, err)
	}
	if !strings.Contains(out, "object=host-ed") || strings.Contains(out, tok.PIN) || strings.Contains(out, "pin-") {
		t.Errorf("generate output %q: want the key URI without PIN attributes", out)
	}

	out, _, err = runKeys(t, "pub", ref)
	if err != nil {
		t.Fatal(err)
	}
	if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(out)); err != nil || !bytes.Equal(k.Marshal(), pubLine.Marshal()) {
		t.Errorf("pub printed %q, want the generated key", out)
	}
	out, _, err = runKeys(t, "pub", "-known-hosts", "gw.example", ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, hosts, k, _, _, err := ssh.ParseKnownHosts([]byte(out)); err != nil || hosts[0] != "gw.example" || !bytes.Equal(k.Marshal(), pubLine.Marshal()) {
		t.Errorf("pub -known-hosts printed %q: %v", out, err)
	}

	// Import an OpenSSH key and a PKCS #8 key, removing the first file.
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(edKey, "imported")
	if err != nil {
		t.Fatal(err)
	}
	edFile := filepath.Join(t.TempDir(), "id_ed25519")
	os.WriteFile(edFile, pem.EncodeToMemory(block), 0o600)
	out, msg, err := runKeys(t, "import", "-remove", edFile, tok.URI("imported-ed"))
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	want, _ := ssh.NewPublicKey(edKey.Public())
	if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(out)); err != nil || !bytes.Equal(k.Marshal(), want.Marshal()) {
		t.Errorf("import printed %q, want the file's public key", out)
	}
	if _, err := os.Stat(edFile); !os.IsNotExist(err) || !strings.Contains(msg, "only the token holds the key") {
		t.Errorf("-remove: file still there (%v), message %q", err, msg)
	}
	ecKey, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(ecKey)
	ecFile := filepath.Join(t.TempDir(), "key.pem")
	os.WriteFile(ecFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	if _, msg, err := runKeys(t, "import", ecFile, tok.URI("imported-ec")); err != nil || !strings.Contains(msg, "still does too") {
		t.Errorf("import PKCS #8: %v, %q", err, msg)
	}

	out, _, err = runKeys(t, "list", tok.TokenURI())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"host-ed", "imported-ed", "imported-ec", "ecdsa-p384", ssh.FingerprintSHA256(pubLine)} {
		if !strings.Contains(out, w) {
			t.Errorf("list output lacks %q:\n%s", w, out)
		}
	}

	out, _, err = runKeys(t, "delete", ref)
	if err != nil || !strings.Contains(out, "deleted 2 objects") {
		t.Errorf("delete: %q, %v", out, err)
	}
	if _, _, err := runKeys(t, "pub", ref); err == nil || !strings.Contains(err.Error(), "host-ed") {
		t.Errorf("pub after delete: %v, want an error naming the key", err)
	}
}

func TestKeysBadInput(t *testing.T) {
	state := t.TempDir()
	t.Setenv(stateDirEnv, state) // refused PINs are recorded here, not in /var/lib/offload
	tok := softhsmtest.NewToken(t, "cli-bad")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{}, "no keys command"},
		{[]string{"frobnicate", tok.URI("k")}, `unknown keys command "frobnicate"`},
		{[]string{"generate", tok.URI("k")}, "needs -type"},
		{[]string{"generate", "-type", "dsa", tok.URI("k")}, `unknown key type "dsa"`},
		{[]string{"generate", "-type", "ed25519", "pkcs11:token=a;token=b"}, "given twice"},
		{[]string{"generate", "-type", "ed25519", "pkcs11:token=cli-bad;object=k"}, "no PKCS #11 module"},
		{[]string{"generate", "-type", "ed25519", tok.TokenURI()}, "names no key"},
		{[]string{"list"}, "takes 1 argument"},
		{[]string{"import", tok.URI("k")}, "takes 2 argument"},
		{[]string{"import", "/nonexistent/key", tok.URI("k")}, "/nonexistent/key"},
	}
	for _, c := range cases {
		_, _, err := runKeys(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("keys %q: %v, want an error containing %q", c.args, err, c.want)
		}
	}
	// A wrong PIN: a clear error, and the PIN is not in it.
	bad := filepath.Join(t.TempDir(), "pin")
	os.WriteFile(bad, []byte("999999-wrong"), 0o600)
	ref := strings.Replace(tok.URI("k"), "pin-source=", "x-unused=", 1)
	_, _, err := runKeys(t, "list", "-pin-source", bad, ref)
	if err == nil || !strings.Contains(err.Error(), "CKR_PIN_INCORRECT") || strings.Contains(err.Error(), "999999-wrong") {
		t.Errorf("wrong PIN: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(state, "pin-refused-*.json")); len(m) != 1 {
		t.Errorf("refusal markers: %v, want one in $%s", m, stateDirEnv)
	}
}
