package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/config"
)

// pendingStock are the keywords of the stock and hardening configurations
// below whose features other work is building: until then offload refuses
// them (precisely: ErrNotImplemented naming them) and the tests check the
// rest of the file starts. Whoever implements one removes it here; the
// tests fail while a keyword is listed that no longer stops the start.
var pendingStock = map[string]string{}

// sshAuditHardening is the drop-in of the ssh-audit.com hardening guides
// (Debian 12, Ubuntu 22.04/24.04 server).
const sshAuditHardening = `# Restrict key exchange, cipher, and MAC algorithms, as per sshaudit.com hardening guide.
KexAlgorithms sntrup761x25519-sha512@openssh.com,gss-curve25519-sha256-,curve25519-sha256,curve25519-sha256@libssh.org,gss-group16-sha512-,diffie-hellman-group16-sha512,diffie-hellman-group18-sha512,diffie-hellman-group-exchange-sha256
Ciphers aes256-gcm@openssh.com,aes256-ctr,aes192-ctr,aes128-gcm@openssh.com,aes128-ctr
MACs hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,umac-128-etm@openssh.com
HostKeyAlgorithms sk-ssh-ed25519-cert-v01@openssh.com,ssh-ed25519-cert-v01@openssh.com,rsa-sha2-512-cert-v01@openssh.com,rsa-sha2-256-cert-v01@openssh.com,sk-ssh-ed25519@openssh.com,ssh-ed25519,rsa-sha2-512,rsa-sha2-256
RequiredRSASize 3072
CASignatureAlgorithms sk-ssh-ed25519@openssh.com,ssh-ed25519,rsa-sha2-512,rsa-sha2-256
GSSAPIKexAlgorithms gss-curve25519-sha256-,gss-group16-sha512-
HostbasedAcceptedAlgorithms sk-ssh-ed25519-cert-v01@openssh.com,ssh-ed25519-cert-v01@openssh.com,sk-ssh-ed25519@openssh.com,ssh-ed25519,rsa-sha2-512-cert-v01@openssh.com,rsa-sha2-512,rsa-sha2-256-cert-v01@openssh.com,rsa-sha2-256
PubkeyAcceptedAlgorithms sk-ssh-ed25519-cert-v01@openssh.com,ssh-ed25519-cert-v01@openssh.com,sk-ssh-ed25519@openssh.com,ssh-ed25519,rsa-sha2-512-cert-v01@openssh.com,rsa-sha2-512,rsa-sha2-256-cert-v01@openssh.com,rsa-sha2-256
`

// cisHardening are CIS-benchmark style lines: removal lists naming
// algorithms offload never had, and the usual restrictions.
const cisHardening = `Ciphers -3des-cbc,aes128-cbc,aes192-cbc,aes256-cbc,chacha20-poly1305@openssh.com
KexAlgorithms -diffie-hellman-group1-sha1,diffie-hellman-group14-sha1,diffie-hellman-group-exchange-sha1,diffie-hellman-group14-sha256
MACs -hmac-md5,hmac-md5-96,hmac-ripemd160,hmac-sha1-96,umac-64@openssh.com,hmac-md5-etm@openssh.com,hmac-md5-96-etm@openssh.com,hmac-ripemd160-etm@openssh.com,hmac-sha1-96-etm@openssh.com,umac-64-etm@openssh.com,umac-128-etm@openssh.com
LogLevel VERBOSE
MaxAuthTries 4
IgnoreRhosts yes
HostbasedAuthentication no
PermitEmptyPasswords no
PermitUserEnvironment no
ClientAliveInterval 15
ClientAliveCountMax 3
LoginGraceTime 60
MaxStartups 10:30:60
MaxSessions 10
GSSAPIAuthentication no
DisableForwarding yes
`

// TestStockAndHardenedConfigsStart starts offload on Debian's stock
// sshd_config (the openssh-server package's copy) with its drop-in
// directory holding cloud-init's PasswordAuthentication drop-in and the
// hardening lines, and logs in with the OpenSSH client.
func TestStockAndHardenedConfigsStart(t *testing.T) {
	stock := testenv.FirstFile(t, "Debian's stock sshd_config", "apt-get install openssh-server", "/usr/share/openssh/sshd_config")
	b, err := os.ReadFile(stock)
	if err != nil {
		t.Fatal(err)
	}
	cl := newOpenSSHClient(t)
	dir := t.TempDir()
	dropins := filepath.Join(dir, "sshd_config.d")
	os.Mkdir(dropins, 0o755)
	writeFileT(t, dropins, "50-cloud-init.conf", "PasswordAuthentication yes\n")
	writeFileT(t, dropins, "60-ssh-audit-hardening.conf", sshAuditHardening)
	writeFileT(t, dropins, "70-cis.conf", cisHardening)
	text := strings.ReplaceAll(string(b), "/etc/ssh/sshd_config.d", dropins)
	if !strings.Contains(text, "Include "+dropins+"/*.conf") || !strings.Contains(text, "UsePAM yes") {
		t.Fatalf("%s is not the stock file this test expects:\n%s", stock, b)
	}
	key := writeHostKey(t, dir)
	head := fmt.Sprintf("ListenAddress 127.0.0.1:0\nHostKey %s\nAuthorizedKeysFile %s\nStrictModes no\nCalibrationCache none\nPidFile none\n",
		key, cl.authorizedKeys)
	cfg := writeFileT(t, dir, "sshd_config", head+text)

	refused := startRefusals(t, cfg)
	for kw := range pendingStock {
		if !slices.Contains(refused, kw) {
			t.Errorf("%s no longer stops the start: remove it from pendingStock", kw)
		}
	}
	d, _, _ := startTestDaemon(t, cfg)
	out, stderr, err := cl.run(t, d.listeners[0].Addr().String(), "", nil, nil, "echo", "offload-ok")
	if err != nil || out != "offload-ok\n" {
		t.Fatalf("login on the stock configuration: %q %q %v", out, stderr, err)
	}
	c, err := config.Load(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.PasswordAuthentication || !c.UsePAM || c.KbdInteractiveAuthentication || !c.DisableForwarding ||
		c.Subsystem("sftp") != "/usr/lib/openssh/sftp-server" || !slices.Equal(c.AcceptEnv, []string{"LANG", "LC_*"}) ||
		!c.X11Forwarding || c.PrintMotd {
		t.Errorf("stock settings not in effect: %+v", c)
	}
	// X11Forwarding yes is the stock file's, DisableForwarding yes the CIS
	// drop-in's, which wins, as in OpenSSH; PrintMotd no leaves the motd
	// to pam_motd.
	if cc := connectionConfig(c, nil); cc.X11Forwarding || !cc.NoAgentForwarding || !cc.DisableForwarding || !cc.NoMotd {
		t.Errorf("stock connection settings: %+v", cc)
	}
}

// startRefusals checks cfg with -t until it passes, commenting out each
// line refused for a pendingStock keyword; any other failure fails the
// test. It returns the keywords it had to comment out.
func startRefusals(t *testing.T, cfg string) []string {
	t.Helper()
	var refused []string
	for range 10 {
		_, _, err := runSshd("-t", "-f", cfg)
		if err == nil {
			return refused
		}
		var le *config.LineError
		if !errors.As(err, &le) || !errors.Is(err, config.ErrNotImplemented) {
			t.Fatalf("-t: %v", err)
		}
		kw := canonical(le.Keyword)
		if _, ok := pendingStock[kw]; !ok {
			t.Fatalf("-t refuses %s, which is not pending: %v", kw, err)
		}
		if !strings.Contains(err.Error(), "is not implemented in offload") {
			t.Errorf("refusal does not say so: %v", err)
		}
		refused = append(refused, kw)
		commentOut(t, le.File, le.Line)
	}
	t.Fatal("too many refusals")
	return nil
}

func canonical(keyword string) string {
	for _, k := range config.Keywords() {
		if strings.EqualFold(k, keyword) {
			return k
		}
	}
	return keyword
}

func commentOut(t *testing.T, file string, line int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	lines[line-1] = "# refused for now: " + lines[line-1]
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}
