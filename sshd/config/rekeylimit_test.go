package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rekeyLimitCases are RekeyLimit lines and what `sshd -T` prints for
// them ("" for a refusal): OpenSSH 9.2's answers, checked against
// /usr/sbin/sshd by TestRekeyLimitLikeOpenSSH where it is installed.
var rekeyLimitCases = []struct{ arg, want string }{
	{"16", "16 0"}, {"1k", "1024 0"}, {"1K 1s", "1024 1"}, {"1M 5m", "1048576 300"},
	{"4G", "4294967296 0"}, {"8G 1h", "8589934592 3600"}, {"1T", "1099511627776 0"},
	{"1P", "1125899906842624 0"}, {"7E", "8070450532247928832 0"},
	{"9223372036854775807", "9223372036854775807 0"}, {"100000000000", "100000000000 0"},
	{"1.5K", "1536 0"}, {"1.33K", "1361 0"}, {"1.0001K", "1024 0"}, {"1.25M", "1310720 0"},
	{"8388607.99T", "9223372025859659530 0"}, {"16.5", "16 0"}, {"16B", "16 0"}, {"+32", "32 0"},
	{"8G 1W", "8589934592 604800"}, {"1m 1M", "1048576 60"}, {"1g 1D", "1073741824 86400"}, {"4G 1H", "4294967296 3600"},
	{"0", "0 0"}, {"default 5", "0 5"}, {"1M none", "1048576 0"}, {"1M 1h30m", "1048576 5400"},
	{"8E", ""}, {"9223372036854775808", ""}, {"15", ""}, {"1.5", ""}, {"1.5B", ""}, {"010", ""},
	{"1kb", ""}, {"0x10", ""}, {"1e3", ""}, {"-1", ""}, {"1M 1x", ""},
}

// TestRekeyLimitSizes: offload reads RekeyLimit sizes as sshd does,
// above 4 GiB and with fractions included, and prints them alike.
func TestRekeyLimitSizes(t *testing.T) {
	for _, c := range rekeyLimitCases {
		r, err := parseRekeyLimit(strings.Fields(c.arg))
		got := ""
		if err == nil {
			got = r.String()
		}
		if got != c.want {
			t.Errorf("RekeyLimit %s: %q (err %v), want %q", c.arg, got, err, c.want)
		}
	}
}

// TestRekeyLimitLikeOpenSSH runs the cases through OpenSSH's sshd -T.
func TestRekeyLimitLikeOpenSSH(t *testing.T) {
	sshd := "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		t.Skip("no OpenSSH sshd at /usr/sbin/sshd")
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "hk")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Skipf("ssh-keygen: %v: %s", err, out)
	}
	probe, _ := exec.Command(sshd, "-T", "-f", "/dev/null", "-o", "HostKey="+key).CombinedOutput()
	if !strings.Contains(string(probe), "\nrekeylimit ") {
		t.Skipf("sshd -T does not run here: %.300s", probe)
	}
	for _, c := range rekeyLimitCases {
		out, _ := exec.Command(sshd, "-T", "-f", "/dev/null", "-o", "HostKey="+key, "-o", "RekeyLimit="+c.arg).CombinedOutput()
		got := ""
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(line, "rekeylimit "); ok {
				got = v
			}
		}
		if got != c.want {
			t.Errorf("OpenSSH sshd -T with RekeyLimit %s: %q, the table says %q", c.arg, got, c.want)
		}
	}
}
