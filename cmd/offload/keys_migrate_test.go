//go:build cgo && !nopkcs11

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
	"golang.org/x/crypto/ssh"
)

// TestMigrationGuide follows docs/migration.md end to end with temporary
// directories for /etc/ssh and /etc/offload, a SoftHSM token and
// 127.0.0.1: OpenSSH's host keys made by ssh-keygen are migrated into the
// token (keys migrate -scan: a key scan of offload sshd serving the token
// shows the files' fingerprints), then both ways back to Debian 12's
// OpenSSH are taken: with the key files kept, and, for RSA and ECDSA, with
// only their public halves and the token's keys served through ssh-agent
// (HostKeyAgent). Each time ssh-keyscan sees the original fingerprints.
func TestMigrationGuide(t *testing.T) {
	keygen := testenv.LookPath(t, "ssh-keygen", "apt-get install openssh-client")
	keyscan := testenv.LookPath(t, "ssh-keyscan", "apt-get install openssh-client")
	tok := softhsmtest.NewToken(t, "migrate")
	for _, e := range tok.Environ() {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	// keys migrate -scan starts this test binary as offload sshd.
	t.Setenv("OFFLOAD_TEST_MAIN", "1")

	etcSSH := t.TempDir()
	for _, typ := range []string{"ed25519", "ecdsa", "rsa"} {
		f := filepath.Join(etcSSH, "ssh_host_"+typ+"_key")
		if out, err := exec.Command(keygen, "-q", "-t", typ, "-N", "", "-f", f).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	want := fileFingerprints(t, etcSSH)

	// Step 1: migrate, with the key scan, writing the configuration lines.
	conf := filepath.Join(t.TempDir(), "hostkeys.conf")
	tokenURI := "pkcs11:token=" + tok.Label + "?module-path=" + tok.Module + "&pin-source=" + tok.PINFile
	out, msg, err := runKeys(t, "migrate", "-dir", etcSSH, "-scan", "-config", conf, tokenURI)
	if err != nil {
		t.Fatalf("keys migrate: %v\n%s", err, msg)
	}
	for typ, fp := range want {
		if !strings.Contains(msg, " "+fp+", as "+filepath.Join(etcSSH, "ssh_host_"+typ+"_key")) {
			t.Errorf("keys migrate's scan does not show %s %s:\n%s", typ, fp, msg)
		}
	}
	if out != "" {
		t.Errorf("with -config, keys migrate printed %q", out)
	}
	lines, _ := os.ReadFile(conf)
	for _, w := range []string{"HostKey pkcs11:token=" + tok.Label + ";object=ssh_host_ed25519_key\n",
		"HostKey pkcs11:token=" + tok.Label + ";object=ssh_host_rsa_key\n", "PKCS11Module " + tok.Module + "\n",
		"PKCS11PinSource " + tok.PINFile + "\n"} {
		if !bytes.Contains(lines, []byte(w)) {
			t.Errorf("%s lacks %q:\n%s", conf, w, lines)
		}
	}
	// Running it again changes nothing (the keys are there already).
	if _, msg, err := runKeys(t, "migrate", "-dir", etcSSH, tokenURI); err != nil || strings.Count(msg, "already in the token") != 3 {
		t.Errorf("second keys migrate: %v\n%s", err, msg)
	}

	// Step 2: offload sshd with the written lines (as in
	// /etc/offload/sshd_config.d/) serves the same fingerprints.
	port := freePortT(t)
	offloadConf := writeFileT(t, t.TempDir(), "sshd_config", fmt.Sprintf(
		"Include %s\nListenAddress 127.0.0.1\nPort %d\nPidFile none\nPKCS11StateDir %s\nCalibrationCache none\nPerSourcePenaltyExemptList 127.0.0.1\n",
		conf, port, t.TempDir()))
	self, _ := os.Executable()
	startServer(t, port, self, "sshd", "-D", "-e", "-f", offloadConf)
	checkScan(t, keyscan, port, want)

	// Rollback A: OpenSSH with the key files, which stayed.
	sshdBin := testenv.FirstFile(t, "OpenSSH sshd", "apt-get install openssh-server", "/usr/sbin/sshd")
	if _, err := os.Stat("/run/sshd"); err != nil {
		testenv.Missing(t, "sshd's privilege separation directory /run/sshd", "mkdir /run/sshd as root")
	}
	port = freePortT(t)
	args := []string{"-D", "-e", "-f", "/dev/null", "-o", "ListenAddress=127.0.0.1", "-o", "Port=" + strconv.Itoa(port), "-o", "PidFile=none"}
	for _, typ := range []string{"ed25519", "ecdsa", "rsa"} {
		args = append(args, "-o", "HostKey="+filepath.Join(etcSSH, "ssh_host_"+typ+"_key"))
	}
	startServer(t, port, sshdBin, args...)
	checkScan(t, keyscan, port, want)

	// Rollback B: the private files gone (keys import -remove), RSA and
	// ECDSA served from the token through ssh-agent.
	rollbackThroughAgent(t, tok.Module, tok.PINFile, etcSSH, sshdBin, keyscan, want)
}

// rollbackThroughAgent is docs/migration.md's "without the key files":
// ssh-agent loads the token's keys (ssh-add -s), OpenSSH's sshd signs with
// them through HostKeyAgent, with only the public halves on disk.
func rollbackThroughAgent(t *testing.T, module, pinFile, etcSSH, sshdBin, keyscan string, want map[string]string) {
	add := testenv.LookPath(t, "ssh-add", "apt-get install openssh-client")
	dir := t.TempDir()
	sock := filepath.Join(dir, "agent.sock")
	// -P: the agent loads only this module (its default allows
	// /usr/lib*/*); it matches the module's real path.
	real, err := filepath.EvalSymlinks(module)
	if err != nil {
		t.Fatal(err)
	}
	alog := sshtest.SSHAgent(t, sock, "-P", real)
	askpass := writeFileT(t, dir, "askpass", "#!/bin/sh\ncat "+pinFile+"\n")
	os.Chmod(askpass, 0o755)
	cmd := exec.Command(add, "-s", module)
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock, "SSH_ASKPASS="+askpass, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:0")
	cmd.Stdin = nil
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add -s: %v\n%s\nagent: %s", err, out, alog.String())
	}
	// Only the public halves remain, as after keys import -remove.
	pubOnly := t.TempDir()
	port := freePortT(t)
	args := []string{"-D", "-e", "-f", "/dev/null", "-o", "ListenAddress=127.0.0.1", "-o", "Port=" + strconv.Itoa(port),
		"-o", "PidFile=none", "-o", "HostKeyAgent=" + sock}
	wantRollback := map[string]string{}
	for _, typ := range []string{"ecdsa", "rsa"} {
		name := "ssh_host_" + typ + "_key.pub"
		b, err := os.ReadFile(filepath.Join(etcSSH, name))
		if err != nil {
			t.Fatal(err)
		}
		writeFileT(t, pubOnly, name, string(b))
		args = append(args, "-o", "HostKey="+filepath.Join(pubOnly, name))
		wantRollback[typ] = want[typ]
	}
	startServer(t, port, sshdBin, args...)
	checkScan(t, keyscan, port, wantRollback)
}

// fileFingerprints: key type (as ssh-keyscan -t names it) -> SHA256
// fingerprint of DIR/ssh_host_TYPE_key.pub.
func fileFingerprints(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, typ := range []string{"ed25519", "ecdsa", "rsa"} {
		b, err := os.ReadFile(filepath.Join(dir, "ssh_host_"+typ+"_key.pub"))
		if err != nil {
			t.Fatal(err)
		}
		k, _, _, _, err := ssh.ParseAuthorizedKey(b)
		if err != nil {
			t.Fatal(err)
		}
		m[typ] = ssh.FingerprintSHA256(k)
	}
	return m
}

func freePortT(t *testing.T) int {
	t.Helper()
	p, _ := strconv.Atoi(testenv.FreePort(t))
	return p
}

// startServer runs a server until the test ends and waits until it
// listens on 127.0.0.1:port, a port FreePort reserved for the test (no
// other process answers on it).
func startServer(t *testing.T, port int, bin string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("%s log:\n%s", filepath.Base(bin), log.String())
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var ended bool
	answers := testenv.WaitUntil(t, func() bool {
		select {
		case err := <-done:
			done <- err // for the cleanup's wait
			ended = true
			return true
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if !answers || ended {
		t.Fatalf("%s %v does not listen on %s (ended: %v)", bin, args, addr, ended)
	}
}

// checkScan: ssh-keyscan of 127.0.0.1:port shows exactly want's key types
// with want's fingerprints.
func checkScan(t *testing.T, keyscan string, port int, want map[string]string) {
	t.Helper()
	types := make([]string, 0, len(want))
	for typ := range want {
		types = append(types, typ)
	}
	out, err := exec.Command(keyscan, "-p", strconv.Itoa(port), "-t", strings.Join(types, ","), "127.0.0.1").Output()
	if err != nil {
		t.Fatalf("ssh-keyscan: %v", err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if _, rest, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
			if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(rest)); err == nil {
				got[map[string]string{ssh.KeyAlgoED25519: "ed25519", ssh.KeyAlgoRSA: "rsa", ssh.KeyAlgoECDSA256: "ecdsa"}[k.Type()]] = ssh.FingerprintSHA256(k)
			}
		}
	}
	for typ, fp := range want {
		if got[typ] != fp {
			t.Errorf("ssh-keyscan -p %d: %s is %q, want %s (the file's)", port, typ, got[typ], fp)
		}
	}
}

// TestKeysImportRemoveWarns: -remove of an Ed25519 key, which Debian 12's
// OpenSSH cannot serve from a token, warns that the way back is lost; an
// RSA key's does not.
func TestKeysImportRemoveWarns(t *testing.T) {
	keygen := testenv.LookPath(t, "ssh-keygen", "apt-get install openssh-client")
	tok := softhsmtest.NewToken(t, "rmwarn")
	dir := t.TempDir()
	for _, typ := range []string{"ed25519", "rsa"} {
		f := filepath.Join(dir, typ)
		if out, err := exec.Command(keygen, "-q", "-t", typ, "-N", "", "-f", f).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
		_, msg, err := runKeys(t, "import", "-remove", f, tok.URI(typ))
		if err != nil {
			t.Fatalf("import -remove %s: %v\n%s", typ, err, msg)
		}
		warned := strings.Contains(msg, "warning: -remove deletes") && strings.Contains(msg, "cannot serve a ssh-ed25519 host key from a token")
		if warned != (typ == "ed25519") {
			t.Errorf("import -remove %s: warned=%v:\n%s", typ, warned, msg)
		}
	}
}
