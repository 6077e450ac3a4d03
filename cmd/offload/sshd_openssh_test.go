package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/config"
)

// printDiffAllowed are the -T lines that differ from OpenSSH 9.2's sshd on
// purpose: algorithm lists (offload's transport has its own), defaults of
// features offload refuses (it says what it does: off), its pid file
// default, and what 9.2 lacks or has that 10 changed.
var printDiffAllowed = []string{"ciphers", "macs", "kexalgorithms", "hostkeyalgorithms", "pubkeyacceptedalgorithms",
	"casignaturealgorithms", "hostbasedacceptedalgorithms",
	"ipqos", "printlastlog", "pidfile", "permitrootlogin",
	// keyboard-interactive is off unless configured (OpenSSH: on, with
	// nothing to ask without PAM).
	"kbdinteractiveauthentication",
	// Only in one of them: GSSAPI and Kerberos (Debian's build has them,
	// offload does not), OpenSSH 10's keywords 9.2 lacks, offload's own.
	"gssapiauthentication", "gssapicleanupcredentials", "gssapikexalgorithms", "gssapikeyexchange",
	"gssapistorecredentialsonrekey", "gssapistrictacceptorcheck", "kerberosauthentication", "kerberosorlocalpasswd",
	"kerberosticketcleanup", "channeltimeout", "pamservicename", "persourcepenalties", "persourcepenaltyexemptlist",
	"rdomain", "refuseconnection"}

// TestPrintMatchesOpenSSH compares `offload sshd -T` with `sshd -T` on
// the same configuration and -C connections, line by line: apart from
// printDiffAllowed, every line is the same (keywords, value formats, the
// Match blocks' effect).
func TestPrintMatchesOpenSSH(t *testing.T) {
	sshdBin := testenv.FirstFile(t, "OpenSSH sshd", "apt-get install openssh-server", "/usr/sbin/sshd")
	dir := t.TempDir()
	key := writeHostKey(t, dir)
	banner := filepath.Join(dir, "banner")
	text := "HostKey " + key + "\nPort 2222\nListenAddress 127.0.0.1\nPermitRootLogin no\nMaxAuthTries 3\n" +
		"AllowUsers alice bob\nAcceptEnv LANG LC_*\nBanner " + banner + "\nClientAliveInterval 30\n" +
		"Subsystem sftp internal-sftp\nPasswordAuthentication no\nUsePAM yes\nLogLevel VERBOSE\nMaxStartups 5:50:20\n" +
		"RekeyLimit 1G 1h\nAuthorizedKeysFile .ssh/authorized_keys /etc/ssh/keys/%u\nUseDNS no\nStreamLocalBindMask 0117\n" +
		"X11Forwarding yes\nX11DisplayOffset 20\nXAuthLocation /usr/bin/xauth\nPermitListen 8080 localhost:*\nPermitOpen db:5432\n" +
		"GatewayPorts clientspecified\nPermitUserEnvironment LANG,LC_*\nStreamLocalBindUnlink yes\nUnusedConnectionTimeout 10m\n" +
		"SetEnv TZ=UTC\nPrintMotd no\nChannelTimeout session:*=5m global=1h\n" +
		"Match User alice Address 192.0.2.0/24\n\tMaxSessions 2\n\tAllowTcpForwarding no\n\tBanner none\n" +
		"\tPermitTTY no\n\tForceCommand internal-sftp -R\n\tX11UseLocalhost no\n\tAllowAgentForwarding no\n\tSetEnv FOO=bar\n" +
		"\tAllowStreamLocalForwarding local\n\tStreamLocalBindMask 0111\n\tDisableForwarding yes\n\tPermitUserRC no\n" +
		"\tPermitOpen none\n\tPermitListen 9000\n\tGatewayPorts no\n\tX11DisplayOffset 30\n\tChannelTimeout none\n" +
		"Match LocalPort 2222 User bob\n\tMaxAuthTries 1\n\tAcceptEnv TZ\n\tX11Forwarding no\n\tUnusedConnectionTimeout none\n" +
		"\tStreamLocalBindUnlink no\n\tForceCommand /usr/bin/printenv SSH_ORIGINAL_COMMAND\n"
	writeFileT(t, dir, "banner", "hello\n")
	cfg := writeFileT(t, dir, "sshd_config", text)
	for _, spec := range []string{"user=alice,addr=192.0.2.9,host=h,laddr=127.0.0.1,lport=2222",
		"user=alice,addr=198.51.100.1,host=h,laddr=127.0.0.1,lport=2222", "user=bob,addr=198.51.100.1,host=h,laddr=127.0.0.1,lport=2222"} {
		args := []string{"-T", "-f", cfg}
		if spec != "" {
			args = append(args, "-C", spec)
		}
		want, err := exec.Command(sshdBin, args...).CombinedOutput()
		if err != nil {
			if strings.Contains(string(want), "privilege separation directory") {
				testenv.Missing(t, "sshd's privilege separation directory /run/sshd", "mkdir /run/sshd as root")
			}
			t.Fatalf("sshd %v: %v\n%s", args, err, want)
		}
		got, _, err := runSshd(append(args, "-o", "CalibrationCache=none")...)
		if err != nil {
			t.Fatalf("offload sshd %v: %v", args, err)
		}
		compareDump(t, spec, string(want), got)
	}
}

func compareDump(t *testing.T, spec, want, got string) {
	t.Helper()
	lines := func(s string) map[string][]string {
		m := map[string][]string{}
		for _, l := range strings.Split(s, "\n") {
			if l == "" || l[0] == '#' {
				continue
			}
			k, _, _ := strings.Cut(l, " ")
			m[k] = append(m[k], l)
		}
		return m
	}
	w, g := lines(want), lines(got)
	for _, ki := range config.KeywordTable() {
		if ki.Own {
			delete(g, strings.ToLower(ki.Name)) // offload's own keywords
		}
	}
	for k := range w {
		if !slices.Contains(printDiffAllowed, k) && !slices.Equal(w[k], g[k]) {
			t.Errorf("-C %q: %s: sshd prints %q, offload %q", spec, k, w[k], g[k])
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok && !slices.Contains(printDiffAllowed, k) {
			t.Errorf("-C %q: offload prints %q, sshd nothing", spec, g[k])
		}
	}
}

func writeFileT(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPrintDefaultsMatchOpenSSH compares -T with sshd's on configurations
// that leave most keywords at their defaults, ListenAddress included
// (sshd prints the wildcard addresses then). offload's one default sshd
// lacks is its sftp subsystem (internal-sftp), left out of the comparison.
func TestPrintDefaultsMatchOpenSSH(t *testing.T) {
	sshdBin := testenv.FirstFile(t, "OpenSSH sshd", "apt-get install openssh-server", "/usr/sbin/sshd")
	dir := t.TempDir()
	key := writeHostKey(t, dir)
	for i, extra := range []string{"", "Port 2222\nPort 2223\n", "AddressFamily inet\nPort 2200\n", "AddressFamily inet6\n"} {
		cfg := writeFileT(t, dir, fmt.Sprintf("sshd_config%d", i), "HostKey "+key+"\n"+extra)
		want, err := exec.Command(sshdBin, "-T", "-f", cfg).CombinedOutput()
		if err != nil {
			if strings.Contains(string(want), "privilege separation directory") {
				testenv.Missing(t, "sshd's privilege separation directory /run/sshd", "mkdir /run/sshd as root")
			}
			t.Fatalf("sshd -T: %v\n%s", err, want)
		}
		got, _, err := runSshd("-T", "-f", cfg, "-o", "CalibrationCache=none")
		if err != nil {
			t.Fatalf("offload sshd -T: %v", err)
		}
		got = strings.Replace(got, "subsystem sftp internal-sftp\n", "", 1)
		if !strings.Contains(string(want), "listenaddress ") {
			t.Fatalf("sshd -T printed no listenaddress:\n%s", want)
		}
		compareDump(t, strings.TrimSpace(extra), string(want), got)
	}
}

// TestIncludeLikeOpenSSH ports OpenSSH's servcfginclude regress test,
// side by side: a configuration spread over included files (a glob in
// lexical order, a nested Include, Include inside a Match block, a Match
// inside an included file that ends with it, first value wins) gives the
// same sshd -T -C output under offload as under OpenSSH's sshd.
func TestIncludeLikeOpenSSH(t *testing.T) {
	sshdBin := testenv.FirstFile(t, "OpenSSH sshd", "apt-get install openssh-server", "/usr/sbin/sshd")
	dir := t.TempDir()
	key := writeHostKey(t, dir)
	d := filepath.Join(dir, "conf.d")
	os.Mkdir(d, 0o755)
	writeFileT(t, d, "10-first.conf", "MaxSessions 3\nInclude "+filepath.Join(dir, "nested.conf")+"\n")
	writeFileT(t, d, "20-second.conf", "MaxSessions 9\nMaxAuthTries 4\nMatch User bob\n\tBanner /etc/issue\n")
	writeFileT(t, d, "30-third.conf", "X11Forwarding yes\n")
	writeFileT(t, dir, "nested.conf", "PermitTTY no\nMaxAuthTries 2\n")
	writeFileT(t, dir, "inmatch.conf", "AllowTcpForwarding no\nMaxSessions 1\n")
	cfg := writeFileT(t, dir, "sshd_config", "HostKey "+key+"\nInclude "+filepath.Join(d, "*.conf")+"\n"+
		"MaxAuthTries 5\nClientAliveInterval 7\nMatch User alice\n\tInclude "+filepath.Join(dir, "inmatch.conf")+"\n"+
		"Match all\n\tPermitTTY yes\n")
	for _, spec := range []string{"user=alice,host=h,addr=192.0.2.1,laddr=127.0.0.1,lport=22",
		"user=bob,host=h,addr=192.0.2.1,laddr=127.0.0.1,lport=22", "user=carol,host=h,addr=192.0.2.1,laddr=127.0.0.1,lport=22"} {
		want, err := exec.Command(sshdBin, "-T", "-f", cfg, "-C", spec).CombinedOutput()
		if err != nil {
			if strings.Contains(string(want), "privilege separation directory") {
				testenv.Missing(t, "sshd's privilege separation directory /run/sshd", "mkdir /run/sshd as root")
			}
			t.Fatalf("sshd -T: %v\n%s", err, want)
		}
		got, _, err := runSshd("-T", "-f", cfg, "-C", spec, "-o", "CalibrationCache=none")
		if err != nil {
			t.Fatalf("offload sshd -T: %v", err)
		}
		got = strings.Replace(got, "subsystem sftp internal-sftp\n", "", 1)
		compareDump(t, spec, string(want), got)
		for _, l := range []string{"maxsessions", "maxauthtries", "permittty", "x11forwarding", "allowtcpforwarding", "banner"} {
			if !strings.Contains(string(want), "\n"+l+" ") {
				t.Fatalf("sshd -T lacks %s:\n%s", l, want)
			}
		}
	}
}
