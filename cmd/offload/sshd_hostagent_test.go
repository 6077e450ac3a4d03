package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/config"
	"github.com/offload/offload/sshd/transport"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// serveTestAgent serves an in-memory agent holding keys on a socket in a
// temporary directory and returns the socket.
func serveTestAgent(t *testing.T, keys ...crypto.PrivateKey) string {
	t.Helper()
	ring := agent.NewKeyring()
	for _, k := range keys {
		if err := ring.Add(agent.AddedKey{PrivateKey: k}); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { agent.ServeAgent(ring, c); c.Close() }()
		}
	}()
	return sock
}

// writePublicKey writes pub as ssh-keygen writes a .pub file.
func writePublicKey(t *testing.T, dir, name string, pub crypto.PublicKey) string {
	t.Helper()
	p, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, ssh.MarshalAuthorizedKey(p), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A HostKey naming a public key file opens, with HostKeyAgent, as a key
// the agent signs with: RSA with the SHA-2 algorithm asked for, through
// the transport's host-key signer; Ed25519 also as a crypto.Signer.
func TestHostKeyAgentSigns(t *testing.T) {
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ek, _ := ed25519.GenerateKey(rand.Reader)
	sock := serveTestAgent(t, rk, ek)
	dir := t.TempDir()
	rsaPub := writePublicKey(t, dir, "rsa_key.pub", rk.Public())
	edPub := writePublicKey(t, dir, "ed_key.pub", ek.Public())
	c := agentConfig(t, sock, strings.TrimSuffix(rsaPub, ".pub"), edPub)
	keys, err := openHostKeys(context.Background(), c, agentTestRegistry(t, c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].provider != agentProviderName || keys[1].provider != agentProviderName {
		t.Fatalf("keys %+v, want both from the agent", keys)
	}
	hs, pubs, err := transport.NewHostKeySigner(signers(keys), nil)
	if err != nil {
		t.Fatal(err)
	}
	H := sha256.Sum256([]byte("exchange hash"))
	for _, alg := range []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256} {
		blob, err := hs.SignExchange(alg, pubs[0].Marshal(), H[:])
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		var sig ssh.Signature
		if err := ssh.Unmarshal(blob, &sig); err != nil || sig.Format != alg {
			t.Fatalf("%s: signature %q, %v", alg, sig.Format, err)
		}
		if err := pubs[0].Verify(H[:], &sig); err != nil {
			t.Errorf("%s: %v", alg, err)
		}
	}
	raw, err := keys[1].signer.Sign(rand.Reader, []byte("message"), crypto.Hash(0))
	if err != nil || !ed25519.Verify(ek.Public().(ed25519.PublicKey), []byte("message"), raw) {
		t.Errorf("Ed25519 crypto.Signer: %v", err)
	}
	d := sha256.Sum256([]byte("message"))
	if _, err := keys[0].signer.Sign(rand.Reader, d[:], crypto.SHA256); !errors.Is(err, errAgentDigest) {
		t.Errorf("RSA digest: %v, want errAgentDigest", err)
	}
}

// An unreachable agent is logged, as OpenSSH's sshd does, and a HostKey
// that only it could serve is skipped with a reason that says so; a key
// the agent does not hold fails at signing, not at the start.
func TestHostKeyAgentUnreachable(t *testing.T) {
	_, ek, _ := ed25519.GenerateKey(rand.Reader)
	dir := t.TempDir()
	edPub := writePublicKey(t, dir, "ed_key.pub", ek.Public())
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	c := agentConfig(t, filepath.Join(dir, "no.sock"), edPub)
	_, err := openHostKeys(context.Background(), c, agentTestRegistry(t, c), log)
	if err == nil || !strings.Contains(err.Error(), "none is reachable") {
		t.Errorf("openHostKeys: %v", err)
	}
	if !strings.Contains(logs.String(), "Could not connect to agent") {
		t.Errorf("log: %s", logs.String())
	}
	c = agentConfig(t, serveTestAgent(t), edPub) // an agent that holds nothing
	keys, err := openHostKeys(context.Background(), c, agentTestRegistry(t, c), log)
	if err != nil {
		t.Fatal(err)
	}
	hs, pubs, err := transport.NewHostKeySigner(signers(keys), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hs.SignExchange(ssh.KeyAlgoED25519, pubs[0].Marshal(), make([]byte, 32)); err == nil {
		t.Error("a key the agent does not hold signed")
	}
}

// agentConfig is a configuration with HostKeyAgent sock and the HostKey
// lines given.
func agentConfig(t *testing.T, sock string, hostKeys ...string) *config.Config {
	t.Helper()
	text := "CalibrationCache none\nHostKeyAgent " + sock + "\n"
	for _, k := range hostKeys {
		text += "HostKey " + k + "\n"
	}
	c, err := config.Parse("sshd_config", strings.NewReader(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func agentTestRegistry(t *testing.T, c *config.Config) *provider.Registry {
	t.Helper()
	reg, err := sshdRegistry(c, provider.NewMetrics(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return reg
}

// A security-key public key is refused with its reason, not served.
func TestHostKeyAgentRefusesSecurityKeys(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	blob := ssh.Marshal(struct {
		Name string
		Key  []byte
		App  string
	}{"sk-ssh-ed25519@openssh.com", pub, "ssh:"})
	k, err := ssh.ParsePublicKey(blob)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sk.pub")
	if err := os.WriteFile(path, ssh.MarshalAuthorizedKey(k), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &hostAgent{sock: serveTestAgent(t)}
	if _, err := a.signer(path); err == nil || !strings.Contains(err.Error(), "security-key") {
		t.Errorf("signer: %v", err)
	}
}
