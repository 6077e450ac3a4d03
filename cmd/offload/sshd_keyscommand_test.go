package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// TestKeysCommandConnectionTokens: AuthorizedKeysCommand's %C (client
// address and port, server address and port) and %D (routing domain:
// none, so empty) tokens of OpenSSH 10's sshd_config(5), expanded for a
// login with the OpenSSH client through the daemon (the monitor decides
// the login, so it must know the connection's local end).
func TestKeysCommandConnectionTokens(t *testing.T) {
	testenv.Root(t)
	cl := newOpenSSHClient(t)
	dir := filepath.Join("/run", testenv.UniqueName("ofkc")) // root's, not /tmp: the safe-path check
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	out := filepath.Join(dir, "args")
	if err := os.WriteFile(out, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(out, 0o666)
	keys, err := os.ReadFile(cl.authorizedKeys)
	if err != nil {
		t.Fatal(err)
	}
	cmd := writeFileT(t, dir, "keys", "#!/bin/sh\nIFS='|'; echo \"$*\" > "+out+"\necho '"+strings.TrimSpace(string(keys))+"'\n")
	os.Chmod(cmd, 0o755)
	port := freePorts(t, 1)[0]
	cfg := writeConfig(t, fmt.Sprintf("ListenAddress 127.0.0.1:%d\nAuthorizedKeysFile none\nAuthorizedKeysCommand %s %%C %%D %%u\nAuthorizedKeysCommandUser nobody\n",
		port, cmd))
	startTestDaemon(t, cfg)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if o, stderr, err := cl.run(t, addr, "", nil, nil, "echo", "offload-ok"); err != nil || o != "offload-ok\n" {
		t.Fatalf("login through AuthorizedKeysCommand: %q %q %v", o, stderr, err)
	}
	got, _ := os.ReadFile(out)
	f := strings.Split(strings.TrimSpace(string(got)), "|")
	if len(f) != 3 || f[1] != "" || f[2] != cl.user {
		t.Fatalf("command arguments %q, want %%C|(empty %%D)|%s", got, cl.user)
	}
	c := strings.Fields(f[0])
	if len(c) != 4 || c[0] != "127.0.0.1" || c[2] != "127.0.0.1" || c[3] != fmt.Sprint(port) || c[1] == "0" {
		t.Fatalf("%%C = %q, want \"127.0.0.1 <client port> 127.0.0.1 %d\"", f[0], port)
	}
}
