package auth_test

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// compressionRun logs in with ssh -v (and -C when asked), sends 300 KB of
// zeros and reads 300 KB of text back; it returns what the client
// negotiated ("none" or "zlib@openssh.com" per direction) and whether
// each direction's bytes were actually compressed (OpenSSH's client
// counts them at exit).
func compressionRun(t *testing.T, f *fixture, port string, u *accountUser, compress bool) string {
	t.Helper()
	args := append(sshArgs(port, u.Username, "-v", "-i", u.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "Compression="+map[bool]string{true: "yes", false: "no"}[compress]), "")
	args = append(args[:len(args)-2], "wc -c; seq 1 50000")
	ctx, cancel := testenv.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.ssh, args...)
	cmd.Stdin = bytes.NewReader(make([]byte, 300000))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "failed: " + err.Error() + ": " + lastLines(errb.String(), 5)
	}
	seq, _ := exec.Command("seq", "1", "50000").Output()
	if want := "300000\n" + string(seq); out.String() != want {
		return "wrong data: " + strconv.Itoa(out.Len()) + " bytes"
	}
	var res []string
	for _, m := range regexp.MustCompile(`kex: (client->server|server->client) cipher: .* compression: (\S+)`).FindAllStringSubmatch(errb.String(), -1) {
		res = append(res, m[1]+" "+m[2])
	}
	for _, m := range regexp.MustCompile(`compress (outgoing|incoming): raw data (\d+), compressed (\d+)`).FindAllStringSubmatch(errb.String(), -1) {
		raw, _ := strconv.Atoi(m[2])
		comp, _ := strconv.Atoi(m[3])
		res = append(res, m[1]+" compressed "+strconv.FormatBool(comp*2 < raw))
	}
	return strings.Join(res, ", ")
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// TestCompressionLikeOpenSSH runs OpenSSH 9.2's sshd and offload sshd with
// Compression at its default, yes, delayed and no, and logs in with the
// OpenSSH client with and without -C: both servers negotiate the same
// (zlib@openssh.com only when both sides want it), the data arrives
// whole, and where zlib@openssh.com was negotiated the client counts the
// bytes of each direction compressed (delayed: after authentication).
func TestCompressionLikeOpenSSH(t *testing.T) {
	testenv.Root(t)
	f := newFixture(t)
	u := newAccountUser(t, f, "compress-pw")
	for _, setting := range []string{"", "Compression yes", "Compression delayed", "Compression no"} {
		var lines []string
		if setting != "" {
			lines = append(lines, setting)
		}
		oport, olog := openSSHD(t, f, lines...)
		d := startOffloadDaemon(t, f, nil, nil, lines...)
		for _, c := range []bool{true, false} {
			want := compressionRun(t, f, oport, u, c)
			got := compressionRun(t, f, d.port, u, c)
			t.Logf("%q, client -C %v: OpenSSH %q, offload %q", setting, c, want, got)
			if got != want {
				t.Errorf("%q, client -C %v: offload %q, OpenSSH %q\nOpenSSH log:\n%s\noffload log:\n%s", setting, c, got, want, olog, d.stderr)
			}
			zlib := c && setting != "Compression no"
			if zlib != strings.Contains(want, "zlib@openssh.com") || (zlib && strings.Contains(want, "compressed false")) {
				t.Errorf("%q, client -C %v: OpenSSH %q is not what the test expects", setting, c, want)
			}
		}
	}
}

// TestCompressionWithParamiko: paramiko (compress=True) negotiates
// zlib@openssh.com with offload sshd and moves data both ways.
func TestCompressionWithParamiko(t *testing.T) {
	testenv.Root(t)
	py := testenv.LookPath(t, "/usr/bin/python3", "Debian package python3")
	if exec.Command(py, "-c", "import paramiko").Run() != nil {
		testenv.Missing(t, "paramiko", "Debian package python3-paramiko")
	}
	f := newFixture(t)
	u := newAccountUser(t, f, "compress-pw")
	d := startOffloadDaemon(t, f, nil, nil)
	prog := `
import os, hashlib, paramiko
c = paramiko.SSHClient()
c.set_missing_host_key_policy(paramiko.AutoAddPolicy())
c.connect("127.0.0.1", port=int(os.environ["PORT"]), username=os.environ["USERNAME"],
          key_filename=os.environ["KEY"], compress=True, look_for_keys=False, allow_agent=False, timeout=10)
t = c.get_transport()
stdin, stdout, _ = c.exec_command("md5sum; seq 1 50000")
data = b"offload " * 40000
stdin.write(data)
stdin.channel.shutdown_write()
out = stdout.read().decode()
seq = "".join("%d\n" % i for i in range(1, 50001))
print(t.local_compression, t.remote_compression,
      out.split()[0] == hashlib.md5(data).hexdigest(), out[out.index("\n")+1:] == seq)
c.close()
`
	cmd := exec.Command(py, "-c", prog)
	cmd.Env = append(os.Environ(), "PORT="+d.port, "USERNAME="+u.Username, "KEY="+u.key)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "zlib@openssh.com zlib@openssh.com True True" {
		t.Errorf("paramiko: %v\n%s\noffload log:\n%s", err, out, d.stderr)
	}
}
