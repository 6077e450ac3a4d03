package connection_test

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

// TestPipeLong measures ssh 'cat >/dev/null' upload and 'head -c' download.
func TestPipeLong(t *testing.T) {
	size := longSize(t)
	f := newFixture(t, nil)
	bin := testenv.LookPath(t, "ssh", "apt-get install openssh-client")
	for _, dir := range []string{"upload", "download"} {
		remote := "cat >/dev/null"
		if dir == "download" {
			remote = "head -c " + itoa(size) + " /dev/zero"
		}
		args := append(f.common(), "-p", f.port, "-l", f.user, "127.0.0.1", remote)
		cmd := exec.Command(bin, args...)
		cmd.Env = clientEnv()
		if dir == "upload" {
			cmd.Args = append([]string{"sh", "-c", `head -c "$0" /dev/urandom | "$@"`, itoa(size), bin}, args...)
			cmd.Path = "/bin/sh"
		}
		devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer devnull.Close()
		cmd.Stdout = devnull // a file: no copying goroutine in this process
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		d := time.Since(start)
		t.Logf("ssh pipe %s %d MiB: %v (%.0f MB/s)", dir, size>>20, d.Round(time.Millisecond), float64(size)/d.Seconds()/1e6)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
