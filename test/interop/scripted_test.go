package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A scripted client is a library driven by a script in testdata, which
// takes HOST PORT USER KEY OP PAYLOAD REMOTE LOCAL REKEY [COMMAND] and
// does one of exec, upload and sftp.
func scriptedOps(interp, script string, env func(*attempt) []string) []op {
	run := func(ctx context.Context, a *attempt, opName, remote, local, command string) (string, error) {
		rekey := "0" // or the bytes after which the client re-keys
		if a.c.clientRekey {
			rekey = strconv.FormatUint(rekeyBytes, 10)
		}
		abs, _ := filepath.Abs(filepath.Join("testdata", script))
		args := []string{abs, "127.0.0.1", a.s.port, a.e.user, a.key(), opName, a.e.payload, remote, local, rekey, command}
		var e []string
		if env != nil {
			e = env(a)
		}
		return a.cmd(ctx, e, "", interp, args...)
	}
	return []op{
		{name: "exec", run: func(ctx context.Context, a *attempt) error {
			out, err := run(ctx, a, "exec", "-", "-", execCommand)
			if err == nil && out != execWant {
				err = fmt.Errorf("printed %q, want %q", tail(out, 200), execWant)
			}
			return err
		}},
		{name: "upload", data: true, run: func(ctx context.Context, a *attempt) error {
			dst := a.remotePath("upload")
			if _, err := run(ctx, a, "upload", dst, "-", ""); err != nil {
				return err
			}
			return a.checkUpload(dst)
		}},
		{name: "sftp", data: true, run: func(ctx context.Context, a *attempt) error {
			up, down := a.remotePath("sftp"), filepath.Join(a.local, "sftp-down")
			if _, err := run(ctx, a, "sftp", up, down, ""); err != nil {
				return err
			}
			return a.checkRoundTrip(up, down)
		}},
	}
}

// python finds a Python 3 that imports module: Debian's first (a pyenv
// shim earlier on PATH may not have the Debian packages).
var pythons sync.Map

func python(t *testing.T, module, pkg string) (string, string) {
	if v, ok := pythons.Load(module); ok {
		p := v.([2]string)
		return p[0], p[1]
	}
	cands := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	for _, p := range cands {
		out, err := exec.Command(p, "-W", "ignore", "-c", "import "+module+"; print("+module+".__version__)").Output()
		if err == nil {
			v := [2]string{p, strings.TrimSpace(string(out))}
			pythons.Store(module, v)
			return v[0], v[1]
		}
	}
	missing(t, "the Python module "+module+" (apt-get install "+pkg+")")
	return "", ""
}

func pythonClient(name, module, pkg, script string) *client {
	cl := &client{name: name, rekey: true}
	var interp string
	cl.version = func(t *testing.T) string {
		var v string
		interp, v = python(t, module, pkg)
		return module + " " + v
	}
	ops := scriptedOps("python", script, nil)
	for i := range ops {
		run := ops[i].run
		ops[i].run = func(ctx context.Context, a *attempt) error {
			a.tools["python"] = interp
			return run(ctx, a)
		}
	}
	cl.ops = ops
	return cl
}

// npmDir is where scripts/test.sh installs npm packages: never the
// repository.
func npmDir() string {
	if d := os.Getenv("OFFLOAD_NPM_DIR"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "offload", "npm")
}

func nodeClient() *client {
	modules := filepath.Join(npmDir(), "node_modules")
	cl := &client{name: "node-ssh2", tools: []tool{{"node", "nodejs"}}, rekey: true}
	cl.version = func(t *testing.T) string {
		b, err := os.ReadFile(filepath.Join(modules, "ssh2", "package.json"))
		if err != nil {
			missing(t, "the npm package ssh2 in "+modules+" (npm install --prefix "+npmDir()+" ssh2)")
		}
		var pj struct{ Version string }
		json.Unmarshal(b, &pj)
		return "ssh2 " + pj.Version + ", node " + firstLine("node", "--version")
	}
	cl.ops = scriptedOps("node", "ssh2_client.js", func(*attempt) []string { return []string{"NODE_PATH=" + modules} })
	return cl
}
