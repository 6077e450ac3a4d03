package main

import (
	"crypto"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/config"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// agentProviderName names, in logs and -T, the provider of host keys an
// ssh-agent holds (HostKeyAgent).
const agentProviderName = "agent"

// agentTimeout bounds one conversation with the host-key agent: a hung
// agent fails the key exchange that asked, not the monitor.
const agentTimeout = 10 * time.Second

// hostAgent is the ssh-agent of HostKeyAgent: its socket. Every
// signature dials it anew, as the agent may be restarted while sshd runs.
type hostAgent struct {
	sock string
}

var (
	errNoAgentSocket = errors.New("SSH_AUTH_SOCK is not set")
	errPublicOnly    = errors.New("a public key file: its private key is needed, or an ssh-agent that holds it (HostKeyAgent), and none is reachable")
)

// openHostAgent is the agent HostKeyAgent names (the socket, or
// $SSH_AUTH_SOCK for the value SSH_AUTH_SOCK), nil without one. As
// OpenSSH's sshd, an agent it cannot reach is logged, and the host keys
// that need it are then skipped like any key that cannot be loaded.
func openHostAgent(c *config.Config, log *slog.Logger) *hostAgent {
	sock := c.HostKeyAgent
	if sock == "" {
		return nil
	}
	if sock == "SSH_AUTH_SOCK" {
		sock = os.Getenv("SSH_AUTH_SOCK")
	}
	err := errNoAgentSocket
	if sock != "" {
		var conn net.Conn
		if conn, err = net.DialTimeout("unix", sock, agentTimeout); err == nil {
			conn.Close()
		}
	}
	if err != nil {
		if log != nil {
			log.Error(fmt.Sprintf("Could not connect to agent %q: %v", c.HostKeyAgent, err))
		}
		return nil
	}
	return &hostAgent{sock: sock}
}

// signer is the host key whose public key is in the file ref (an
// OpenSSH public key file; ref+".pub" when ref names the private key's
// path), signing through the agent. The agent is not asked whether it
// holds the key: as in OpenSSH, a key it lacks fails the key exchanges
// that choose it.
func (a *hostAgent) signer(ref string) (crypto.Signer, error) {
	pub, err := readPublicKeyFile(ref)
	if err != nil {
		pub, err = readPublicKeyFile(ref + ".pub")
	}
	if err != nil {
		return nil, err
	}
	cpub, ok := pub.(ssh.CryptoPublicKey)
	if strings.HasPrefix(pub.Type(), "sk-") {
		return nil, fmt.Errorf("%s: security-key (FIDO) host keys are not implemented, in an agent or not", ref)
	}
	if !ok {
		return nil, fmt.Errorf("%s: a %s key cannot be a host key", ref, pub.Type())
	}
	return &agentSigner{key: &agentKey{sock: a.sock, pub: pub}, public: cpub.CryptoPublicKey()}, nil
}

// readPublicKeyFile reads an OpenSSH public key file (one key, as
// ssh-keygen writes it).
func readPublicKeyFile(path string) (ssh.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: not a public key file: %w", path, err)
	}
	return pub, nil
}

// agentKey signs SSH data with a key of the agent: the request names the
// key and, for RSA, the SHA-2 signature algorithm (agent flags).
type agentKey struct {
	sock string
	pub  ssh.PublicKey
}

func (k *agentKey) PublicKey() ssh.PublicKey { return k.pub }

func (k *agentKey) Sign(rand io.Reader, data []byte) (*ssh.Signature, error) {
	return k.SignWithAlgorithm(rand, data, "")
}

// agentFlags are the agent's signature flags of the RSA algorithms.
var agentFlags = map[string]agent.SignatureFlags{
	ssh.KeyAlgoRSASHA256: agent.SignatureFlagRsaSha256,
	ssh.KeyAlgoRSASHA512: agent.SignatureFlagRsaSha512,
}

func (k *agentKey) SignWithAlgorithm(_ io.Reader, data []byte, alg string) (*ssh.Signature, error) {
	conn, err := net.DialTimeout("unix", k.sock, agentTimeout)
	if err != nil {
		return nil, fmt.Errorf("host key agent: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(agentTimeout))
	sig, err := agent.NewClient(conn).SignWithFlags(k.pub, data, agentFlags[alg])
	if err != nil {
		return nil, fmt.Errorf("host key agent: signing with the %s key: %w", k.pub.Type(), err)
	}
	if alg != "" && sig.Format != alg {
		return nil, fmt.Errorf("host key agent: asked for a %s signature, got %s", alg, sig.Format)
	}
	return sig, nil
}

// agentSigner is the crypto.Signer of an agent's host key. The transport
// signs through SSHSigner (the agent signs data, not digests); Sign
// serves only what needs no digest (Ed25519).
type agentSigner struct {
	key    *agentKey
	public crypto.PublicKey
}

func (s *agentSigner) Public() crypto.PublicKey       { return s.public }
func (s *agentSigner) SSHSigner() ssh.AlgorithmSigner { return s.key }

var errAgentDigest = errors.New("host key agent: an agent signs messages, not digests")

func (s *agentSigner) Sign(rand io.Reader, msg []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts.HashFunc() != 0 || s.key.pub.Type() != ssh.KeyAlgoED25519 {
		return nil, errAgentDigest
	}
	sig, err := s.key.SignWithAlgorithm(rand, msg, "")
	if err != nil {
		return nil, err
	}
	return sig.Blob, nil
}

// Provenance says where the key lives, for the handshake's logs.
func (s *agentSigner) Provenance() provider.Provenance {
	return provider.Provenance{Algorithm: s.key.pub.Type(), Provider: agentProviderName, Kind: provider.KindAgent,
		Detail: "ssh-agent at " + s.key.sock}
}
