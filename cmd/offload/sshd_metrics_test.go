package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// TestMetricsLoginsBuildProcess: beside the providers' metrics, /metrics
// counts logins by method and result, says which build runs, and has
// client_golang's process and Go collectors.
func TestMetricsLoginsBuildProcess(t *testing.T) {
	cl := newOpenSSHClient(t)
	port := freePorts(t, 1)[0]
	cfg := writeConfig(t, fmt.Sprintf("ListenAddress 127.0.0.1:%d\nMetricsAddress 127.0.0.1:0\nStrictModes no\nAuthorizedKeysFile %s\nPidFile none\n",
		port, cl.authorizedKeys))
	d, _, _ := startTestDaemon(t, cfg)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if out, stderr, err := cl.run(t, addr, "", nil, nil, "true"); err != nil {
		t.Fatalf("key login: %v %q %q", err, out, stderr)
	}
	// a wrong password, twice
	c, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{User: cl.user, Auth: []ssh.AuthMethod{ssh.RetryableAuthMethod(ssh.Password("wrong"), 2)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
	if err == nil {
		c.Close()
		t.Fatal("wrong password accepted")
	}
	body := scrape(t, d.metricsAddr)
	for _, want := range []string{
		`offload_sshd_logins_total{method="publickey",result="accepted"} 1`,
		`offload_sshd_logins_total{method="password",result="failed"} 2`,
		fmt.Sprintf(`offload_build_info{goarch=%q,goversion=%q,version=%q} 1`, runtime.GOARCH, runtime.Version(), Version),
		"process_cpu_seconds_total ", "process_open_fds ", "process_resident_memory_bytes ",
		"go_goroutines ", "go_memstats_heap_alloc_bytes ", `go_info{version=`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(body, `method="none"`) {
		t.Errorf("the clients' first none request counted:\n%s", grepLines(body, "offload_sshd_logins_total"))
	}
	if t.Failed() {
		t.Logf("logins:\n%s", grepLines(body, "offload_sshd_logins_total"))
	}
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	if _, _, err := net.SplitHostPort(addr); err != nil {
		t.Fatalf("metrics address %q: %v", addr, err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
