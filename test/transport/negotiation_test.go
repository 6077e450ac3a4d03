package transport_test

import (
	"bufio"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/wire"
)

// negotiationCase is one client KEXINIT and what follows it, sent in the
// clear to a server whose key exchanges are curve25519-sha256 first and
// sntrup761x25519-sha512@openssh.com, and whose host-key algorithms are
// ssh-ed25519 first and rsa-sha2-512.
type negotiationCase struct {
	name      string
	kex, host []string
	guess     bool // first_kex_packet_follows, with an all-zero X25519 share as the guess
	offload   string
	openssh   string
}

const (
	replied = "reply"   // KEX_ECDH_REPLY to the valid X25519 share that follows
	refused = "refused" // DISCONNECT or the connection closed
)

// negotiationCases: offload skips empty names where OpenSSH 9.2 stops at
// the first one; a guess is right only when both sides' first key
// exchange and first host-key algorithm agree (RFC 4253 §7), with and
// without strict kex, as in OpenSSH. A wrong guess that were used would
// be refused (its X25519 share is all zeros); a right one that were
// dropped would get no reply.
var negotiationCases = []negotiationCase{
	{"leading-empty-name", []string{"", "curve25519-sha256", strictC}, hostEd, false, replied, refused},
	{"empty-name-between", []string{"foo@example.com", "", "curve25519-sha256", strictC}, hostEd, false, replied, refused},
	{"trailing-empty-name", []string{"curve25519-sha256", strictC, ""}, hostEd, false, replied, replied},
	{"empty-host-key-names", []string{"curve25519-sha256", strictC}, []string{"", "ssh-ed25519", ""}, false, replied, refused},
	{"unknown-names", []string{"foo@example.com", "curve25519-sha256", strictC}, []string{"x@example.com", "ssh-ed25519"}, false, replied, replied},
	{"wrong-guess-kex/strict", []string{"ecdh-sha2-nistp521", "curve25519-sha256", strictC}, hostEd, true, replied, replied},
	{"wrong-guess-kex", []string{"ecdh-sha2-nistp521", "curve25519-sha256"}, hostEd, true, replied, replied},
	{"wrong-guess-host-key/strict", []string{"curve25519-sha256", strictC}, []string{"rsa-sha2-512", "ssh-ed25519"}, true, replied, replied},
	{"right-guess/strict", []string{"curve25519-sha256", strictC}, hostEd, true, replied, replied},
}

const strictC = "kex-strict-c-v00@openssh.com"

var hostEd = []string{"ssh-ed25519"}

// TestNegotiationBesideOpenSSH sends each case to offload and to
// OpenSSH's sshd on the same algorithms and checks both answers.
func TestNegotiationBesideOpenSSH(t *testing.T) {
	kex, hostAlgs := []string{"curve25519-sha256", "sntrup761x25519-sha512@openssh.com"}, []string{"ssh-ed25519", "rsa-sha2-512"}
	f := newFixture(t, &sshd.Config{KexAlgorithms: kex, HostKeyAlgorithms: hostAlgs})
	openssh := startOpenSSHFor(t, kex, hostAlgs)
	for _, tc := range negotiationCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rawNegotiate(t, f.addr, tc); got != tc.offload {
				t.Errorf("offload: %s, want %s", got, tc.offload)
			}
			if got := rawNegotiate(t, openssh, tc); got != tc.openssh {
				t.Errorf("OpenSSH's sshd: %s, want %s", got, tc.openssh)
			}
		})
	}
}

// startOpenSSHFor runs /usr/sbin/sshd (as root) on 127.0.0.1 with an
// Ed25519 and an RSA host key and the given algorithms.
func startOpenSSHFor(t *testing.T, kex, hostAlgs []string) string {
	t.Helper()
	bin := testenv.FirstFile(t, "OpenSSH sshd", "apt-get install openssh-server", "/usr/sbin/sshd")
	testenv.Root(t)
	dir := t.TempDir()
	var keys string
	for _, typ := range []string{"ed25519", "rsa"} {
		hk := filepath.Join(dir, "hk_"+typ)
		testenv.Run(t, "ssh-keygen", "-q", "-t", typ, "-N", "", "-f", hk)
		keys += "HostKey " + hk + "\n"
	}
	port := testenv.FreePort(t)
	addr := net.JoinHostPort("127.0.0.1", port)
	os.MkdirAll("/run/sshd", 0o755) // OpenSSH's privilege separation directory
	cfg := filepath.Join(dir, "sshd_config")
	conf := fmt.Sprintf("ListenAddress 127.0.0.1\nPort %s\n%sPidFile none\nUsePAM no\nKexAlgorithms %s\nHostKeyAlgorithms %s\n",
		port, keys, strings.Join(kex, ","), strings.Join(hostAlgs, ","))
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-D", "-e", "-f", cfg)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if testenv.WaitUntil(t, func() bool { return testenv.Listening(addr) }) {
		return addr
	}
	t.Fatalf("OpenSSH's sshd did not listen on %s", addr)
	return ""
}

// rawNegotiate sends tc's KEXINIT (and its guess) then a valid X25519
// share, all in the clear, and reports what the server answered.
func rawNegotiate(t *testing.T, addr string, tc negotiationCase) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(nc)
	if _, err := nc.Write([]byte("SSH-2.0-raw\r\n")); err != nil {
		t.Fatal(err)
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return refused
		}
		if strings.HasPrefix(line, "SSH-") {
			break
		}
	}
	share, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	out := [][]byte{rawKexInit(tc)}
	if tc.guess && tc.kex[0] == "curve25519-sha256" && tc.host[0] == "ssh-ed25519" {
		out = append(out, ecdhInit(share.PublicKey().Bytes())) // the right guess is the only share
	} else {
		if tc.guess {
			out = append(out, ecdhInit(make([]byte, 32))) // a wrong guess, refused if used
		}
		out = append(out, ecdhInit(share.PublicKey().Bytes()))
	}
	for _, p := range out {
		if _, err := nc.Write(clearPacket(p)); err != nil {
			return refused
		}
	}
	return rawAnswer(r)
}

func rawKexInit(tc negotiationCase) []byte {
	b := append([]byte{wire.MsgKexInit}, make([]byte, 16)...)
	for _, l := range [][]string{tc.kex, tc.host, {"aes128-ctr"}, {"aes128-ctr"}, {"hmac-sha2-256"}, {"hmac-sha2-256"}, {"none"}, {"none"}, nil, nil} {
		b = wire.AppendString(b, strings.Join(l, ","))
	}
	return wire.AppendUint32(wire.AppendBool(b, tc.guess), 0)
}

func ecdhInit(q []byte) []byte { return wire.AppendBytes([]byte{wire.MsgKexECDHInit}, q) }

// clearPacket frames payload without encryption (RFC 4253 §6).
func clearPacket(payload []byte) []byte {
	pad := 8 - (len(payload)+5)%8
	if pad < 4 {
		pad += 8
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)+pad+1))
	b = append(append(b, byte(pad)), payload...)
	return append(b, make([]byte, pad)...)
}

// rawAnswer reads clear packets until one other than KEXINIT.
func rawAnswer(r *bufio.Reader) string {
	for {
		var h [5]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return "no answer"
			}
			return refused
		}
		n := binary.BigEndian.Uint32(h[:4])
		if n < 2 || n > 256<<10 {
			return "bad framing"
		}
		body := make([]byte, n-1)
		if _, err := io.ReadFull(r, body); err != nil {
			return refused
		}
		switch body[0] {
		case wire.MsgKexInit:
			continue
		case wire.MsgKexECDHReply:
			return replied
		case wire.MsgDisconnect:
			return refused
		}
		return fmt.Sprintf("message %d", body[0])
	}
}
