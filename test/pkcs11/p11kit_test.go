//go:build cgo && !nopkcs11

package pkcs11_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/uri"
	"golang.org/x/crypto/ssh"
)

var p11KitClientPaths = []string{
	"/usr/lib/x86_64-linux-gnu/pkcs11/p11-kit-client.so",
	"/usr/lib/aarch64-linux-gnu/pkcs11/p11-kit-client.so",
	"/usr/lib64/pkcs11/p11-kit-client.so",
	"/usr/lib/pkcs11/p11-kit-client.so",
}

// startP11KitServer exports the token over a Unix socket with
// `p11-kit server`, as a fleet's HSM host would, and points this process's
// p11-kit-client.so at it.
func startP11KitServer(t *testing.T, tok *softhsmtest.Token) {
	t.Helper()
	p11kit := testenv.LookPath(t, "p11-kit", "apt-get install p11-kit")
	sock := filepath.Join(t.TempDir(), "p11kit.sock")
	cmd := exec.Command(p11kit, "server", "-f", "-p", tok.Module, "-n", sock, "pkcs11:token="+tok.Label)
	cmd.Env = os.Environ() // carries SOFTHSM2_CONF
	out := &sshtest.LogBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("p11-kit server said: %s", out)
		}
	})
	// The socket's file appears at bind, before the server listens: a
	// client that connects in between is refused and sees no token. The
	// server prints its address once it listens; a connection proves it.
	if !testenv.WaitUntil(t, func() bool {
		return strings.Contains(out.String(), "P11_KIT_SERVER_PID=") && testenv.SocketListening(sock)
	}) {
		t.Fatalf("p11-kit server did not listen on %s before the deadline: %s", sock, out)
	}
	t.Setenv("P11_KIT_SERVER_ADDRESS", "unix:path="+sock)
}

// TestP11KitRemoting reaches a SoftHSM token through p11-kit's remoting:
// `p11-kit server` exports the token and offload loads p11-kit-client.so.
// Keys, signatures, AES-GCM and ECDH all cross the socket.
func TestP11KitRemoting(t *testing.T) {
	client := testenv.FirstFile(t, "p11-kit-client.so", "apt-get install p11-kit-modules", p11KitClientPaths...)
	tok := softhsmtest.NewToken(t, "fleet")
	startP11KitServer(t, tok)

	u := &uri.URI{Token: "fleet", ModulePath: client, PINSource: tok.PINFile}
	p, err := pkcs11.OpenURI(u.String(), pkcs11.Config{HealthInterval: -1})
	if err != nil {
		t.Fatalf("open through p11-kit-client.so: %v", err)
	}
	defer p.Close()
	if id := p.Identity(); !bytes.Contains([]byte(id), []byte("p11-kit-client")) {
		t.Errorf("Identity %q should name the client module", id)
	}
	ctx := context.Background()
	keyURI := *u
	keyURI.Object = "fleet-host"
	s, err := p.Generate(ctx, keyURI.Full(), pkcs11.ECDSAP256)
	if err != nil {
		t.Fatalf("generate through the remote: %v", err)
	}
	d := sha256.Sum256([]byte("fleet"))
	sig, err := s.Sign(rand.Reader, d[:], crypto.SHA256)
	if err != nil || !ecdsa.VerifyASN1(s.Public().(*ecdsa.PublicKey), d[:], sig) {
		t.Fatalf("remote signature: %v", err)
	}
	reg := provider.New(provider.Config{})
	if err := reg.Register(p); err != nil {
		t.Fatal(err)
	}
	if opened, err := reg.Signer(ctx, keyURI.String()); err != nil || !opened.Public().(*ecdsa.PublicKey).Equal(s.Public()) {
		t.Errorf("registry Signer through the remote: %v", err)
	}
	// p11-kit's RPC forwards only mechanisms whose parameters it can
	// marshal; p11-kit 0.24 forwards neither CKM_AES_GCM nor
	// CKM_ECDH1_DERIVE. The provider must then not offer them (bulk crypto
	// and key exchange stay on the CPU), and must when the remote does.
	raw := p.RawMechanisms()["fleet"]
	for _, c := range []struct{ alg, mech string }{{"aes128-gcm", "CKM_AES_GCM"}, {"ecdh-p256", "CKM_ECDH1_DERIVE"}} {
		remote := slices.Contains(raw, c.mech)
		if got := provider.Supports(p, c.alg, 0); got != remote {
			t.Errorf("%s offered = %v, but the remote lists %s = %v", c.alg, got, c.mech, remote)
		}
		if !remote {
			t.Logf("this p11-kit does not forward %s; %s stays on the CPU", c.mech, c.alg)
		}
	}
	if provider.Supports(p, "aes128-gcm", 0) {
		a, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), make([]byte, 16))
		if err != nil {
			t.Fatalf("AEAD through the remote: %v", err)
		}
		ct := a.Seal(nil, make([]byte, 12), []byte("over the socket"), nil)
		if pt, err := a.Open(nil, make([]byte, 12), ct, nil); err != nil || string(pt) != "over the socket" {
			t.Errorf("AEAD round trip: %q, %v", pt, err)
		}
		provider.Release(a)
	}
	if provider.Supports(p, "ecdh-p256", 0) {
		ka, err := p.NewKeyAgreement(provider.MustLookup("ecdh-p256"))
		if err != nil {
			t.Fatal(err)
		}
		peer, _ := ecdh.P256().GenerateKey(rand.Reader)
		mine, err := ka.SharedSecret(peer.PublicKey().Bytes())
		if err != nil {
			t.Fatal(err)
		}
		theirsPub, _ := ecdh.P256().NewPublicKey(ka.PublicKey())
		if theirs, _ := peer.ECDH(theirsPub); !bytes.Equal(mine, theirs) {
			t.Errorf("ECDH through the remote disagrees with crypto/ecdh")
		}
	}
	// Whatever else the remote forwards signs across the socket too.
	for kt, alg := range map[pkcs11.KeyType]string{pkcs11.Ed25519: "ed25519", pkcs11.ECDSAP384: "ecdsa-p384-sha384",
		pkcs11.RSA2048: "rsa-pkcs1v15-sha256"} {
		if !provider.Supports(p, alg, provider.OpSign|provider.OpGenerate) {
			t.Logf("this p11-kit does not forward %s key generation and signing", kt)
			continue
		}
		ku := keyURI
		ku.Object = "fleet-" + string(kt)
		s, err := p.Generate(ctx, ku.Full(), kt)
		if err != nil {
			t.Fatalf("generate %s through the remote: %v", kt, err)
		}
		sp, err := ssh.NewSignerFromSigner(s)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := sp.Sign(rand.Reader, []byte("fleet"))
		if err != nil || sp.PublicKey().Verify([]byte("fleet"), sig) != nil {
			t.Errorf("%s signature through the remote: %v", kt, err)
		}
	}
}
