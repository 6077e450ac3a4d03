package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/config"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/sshlog"
)

// writeHostKey writes an OpenSSH ed25519 private key file and returns its path.
func writeHostKey(t *testing.T, dir string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ssh_host_ed25519_key")
	if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeConfig writes an sshd_config with a fresh host key and returns its path.
func writeConfig(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	key := writeHostKey(t, dir)
	text := "Port 2222\nHostKey " + key + "\nCalibrationCache none\n" + extra
	path := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runSshd(args ...string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	err = cmdSshd(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestSshdCheckOK(t *testing.T) {
	cfg := writeConfig(t, "")
	out, _, err := runSshd("-t", "-f", cfg)
	if err != nil || out != "" {
		t.Fatalf("-t: %v, output %q", err, out)
	}
}

func TestSshdCheckBadConfig(t *testing.T) {
	cfg := writeConfig(t, "MaxAuthTries lots\n")
	_, _, err := runSshd("-t", "-f", cfg)
	var le *config.LineError
	if !errors.As(err, &le) || le.Line != 4 || le.Keyword != "MaxAuthTries" {
		t.Fatalf("err = %v", err)
	}
}

func TestSshdCheckMissingHostKey(t *testing.T) {
	// As sshd: a HostKey that cannot be loaded is logged and skipped
	// while another remains; with none left the start fails.
	cfg := writeConfig(t, "HostKey /nonexistent/key\n")
	_, stderr, err := runSshd("-t", "-f", cfg)
	if err != nil || !strings.Contains(stderr, "unable to load host key") || !strings.Contains(stderr, "/nonexistent/key") {
		t.Fatalf("err = %v, log:\n%s", err, stderr)
	}
	_, _, err = runSshd("-t", "-f", cfg, "-o", "HostKey=/nonexistent/key")
	if err == nil || !strings.Contains(err.Error(), "no host keys available: HostKey /nonexistent/key") {
		t.Fatalf("err = %v", err)
	}
	// Without HostKey, sshd's default files are used, those that can be
	// read; none at all is an error.
	dir := t.TempDir()
	key := writeHostKey(t, dir)
	saved := config.DefaultHostKeys
	t.Cleanup(func() { config.DefaultHostKeys = saved })
	config.DefaultHostKeys = []string{filepath.Join(dir, "missing_rsa_key"), key}
	out, _, err := runSshd("-T", "-o", "CalibrationCache=none")
	if err != nil || !strings.Contains(out, "# hostkey "+key+": ssh-ed25519") {
		t.Fatalf("default host keys: %v\n%s", err, out)
	}
	config.DefaultHostKeys = []string{filepath.Join(dir, "missing_rsa_key")}
	_, _, err = runSshd("-t", "-o", "CalibrationCache=none")
	if err == nil || !strings.Contains(err.Error(), "no HostKey configured") || !strings.Contains(err.Error(), "missing_rsa_key") {
		t.Fatalf("no host key: err = %v", err)
	}
	_, _, err = runSshd("-t", "-o", "CalibrationCache=none", "-o", "HostKey=pkcs11:token=t;object=k")
	if err == nil || !strings.Contains(err.Error(), "needs a PKCS #11 module: set PKCS11Module") {
		t.Fatalf("token key without module: err = %v", err)
	}
}

func TestSshdCheckOverride(t *testing.T) {
	cfg := writeConfig(t, "")
	_, _, err := runSshd("-t", "-f", cfg, "-o", "Ciphers=rot13")
	var le *config.LineError
	if !errors.As(err, &le) || le.File != config.CommandLine {
		t.Fatalf("err = %v", err)
	}
}

func TestSshdPrint(t *testing.T) {
	cfg := writeConfig(t, "ListenAddress 127.0.0.1\nProviderMap aes128-gcm=software\nCryptoPolicy fastest\n")
	out, _, err := runSshd("-T", "-f", cfg, "-p", "2022", "-o", "MaxSessions=3")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"port 2022\n", "listenaddress 127.0.0.1:2022\n", "hostkeyalgorithms ssh-ed25519\n", "maxsessions 3\n", "providermap aes128-gcm=software\n",
		"# cipher aes128-gcm@openssh.com: aes128-gcm by software (pinned to \"software\")\n",
		"# kex mlkem768x25519-sha256: ml-kem-768 by software",
		"# hostkey ", "ssh-ed25519 SHA256:", "held by software\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-T output lacks %q:\n%s", want, out)
		}
	}
	// The output is itself a valid configuration.
	if _, err := config.Parse("printed", strings.NewReader(out), nil); err != nil {
		t.Errorf("-T output does not parse: %v", err)
	}
}

func TestSshdFlags(t *testing.T) {
	for _, args := range [][]string{{"-p", "x"}, {"-p", "70000"}, {"extra"}} {
		if _, _, err := runSshd(append([]string{"-t"}, args...)...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	o, err := parseSshdFlags([]string{"-d", "-d", "-o", "Port=1", "-p", "2", "-f", "x"}, new(bytes.Buffer))
	if err != nil || o.debug != 2 || o.file != "x" || len(o.overrides) != 1 || len(o.ports) != 1 {
		t.Fatalf("%+v %v", o, err)
	}
}

// cloud-init's drop-in turns passwords on; they are checked against the
// shadow database.
func TestSshdPasswordAuthAccepted(t *testing.T) {
	cfg := writeConfig(t, "PasswordAuthentication yes\n")
	if _, _, err := runSshd("-t", "-f", cfg); err != nil {
		t.Fatalf("err = %v", err)
	}
}

func TestSshdServerConfig(t *testing.T) {
	dir := t.TempDir()
	banner := filepath.Join(dir, "banner")
	os.WriteFile(banner, []byte("authorized use only\n"), 0o644)
	c, err := config.Parse("f", strings.NewReader("AcceptEnv LANG LC_*\nSubsystem sftp internal-sftp\nSubsystem x /bin/x\n"+
		"ChannelWindowSize 64M\nMaxSessions 0\nLoginGraceTime 0\nAllowTcpForwarding local\nBanner "+banner+
		"\nStrictModes no\nCiphers aes256-ctr\nAuthorizedKeysFile none\nMaxStartups 3:50:7\nClientAliveInterval 30\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := serverConfig(c, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Conn.WindowSize != 64<<20 || sc.Conn.MaxSessions != -1 || sc.Conn.Subsystems["x"] != "/bin/x" ||
		len(sc.Conn.AcceptEnv) != 2 || sc.Conn.AllowTCPForwarding != connection.ForwardLocal || sc.Conn.ClientAliveInterval != 30*time.Second {
		t.Errorf("connection config %+v", sc.Conn)
	}
	if sc.LoginGraceTime >= 0 || sc.MaxStartups != 7 || len(sc.Ciphers) != 1 || sc.KexAlgorithms != nil {
		t.Errorf("server config %+v", sc)
	}
	if sc.Auth.Banner != "authorized use only\n" || !sc.Auth.IgnoreFileModes || sc.Auth.AuthorizedKeysFiles[0] != "none" {
		t.Errorf("auth config %+v", sc.Auth)
	}
	// As sshd: a missing banner file is no banner (-t, -T and a start
	// go on); one too large for a packet is an error; 100,000 bytes (as
	// OpenSSH's regress banner test sends) is a banner.
	c2, _ := config.Parse("f", strings.NewReader("Banner "+filepath.Join(dir, "missing")+"\n"), nil)
	if sc, err := serverConfig(c2, nil, nil, nil); err != nil || sc.Auth.Banner != "" {
		t.Errorf("missing banner: %v", err)
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, bytes.Repeat([]byte("abcdefghi\n"), 10000), 0o644)
	c3, _ := config.Parse("f", strings.NewReader("Banner "+big+"\n"), nil)
	if sc, err := serverConfig(c3, nil, nil, nil); err != nil || len(sc.Auth.Banner) != 100000 {
		t.Errorf("100,000-byte banner: %v", err)
	}
	os.WriteFile(big, bytes.Repeat([]byte("x"), maxBannerSize+1), 0o644)
	if _, err := serverConfig(c3, nil, nil, nil); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized banner: %v", err)
	}
}

func TestSshdArgs(t *testing.T) {
	in := []string{"-ddd", "-p2222", "-oPort=22", "-o", "Ciphers=aes128-ctr", "-E/tmp/log", "-f/etc/x", "-Dd",
		"-shutdown-timeout", "5s", "-t", "-f=/y", "-E/a=b"}
	want := "-d -d -d -p 2222 -o Port=22 -o Ciphers=aes128-ctr -E /tmp/log -f /etc/x -D -d -shutdown-timeout 5s -t -f=/y -E /a=b"
	if got := strings.Join(sshdArgs(in), " "); got != want {
		t.Errorf("sshdArgs =\n%s\nwant\n%s", got, want)
	}
	o, err := parseSshdFlags([]string{"-ddd", "-p2022", "-oMaxSessions=3"}, new(bytes.Buffer))
	if err != nil || o.debug != 3 || o.ports[0] != "2022" || o.overrides[0] != "MaxSessions=3" {
		t.Fatalf("%+v %v", o, err)
	}
}

// -E writes OpenSSH's format with the syslog prefix, which fail2ban reads.
func TestSshdLogFileFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sshd.log")
	o := &sshdOptions{logFile: path}
	log, closeFn, err := o.logger(new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	log.Info("Invalid user admin from 192.0.2.1 port 4242", sshlog.Worded(), "user", "admin")
	closeFn()
	b, _ := os.ReadFile(path)
	if !regexp.MustCompile(`^\w{3} [ \d]\d \d\d:\d\d:\d\d \S+ sshd\[\d+\]: Invalid user admin from 192.0.2.1 port 4242\n$`).Match(b) {
		t.Fatalf("-E line %q", b)
	}
}
