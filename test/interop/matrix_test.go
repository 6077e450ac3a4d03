package interop_test

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offload/offload/sshd/transport"
)

var (
	writeTable = flag.String("write-table", "", "write the results as markdown to this file (e.g. ../../docs/interop.md); \"\" writes nothing")
	parallel   = flag.Int("cells", 4, "cells run at once")
	selection  = flag.String("cipher-selection", transport.SelectionMeasured, "the servers' CipherSelection (offload sshd's default: measured)")
)

func allClients() []*client {
	return []*client{
		opensshClient(), puttyClient(),
		pythonClient("paramiko", "paramiko", "python3-paramiko", "paramiko_client.py"),
		pythonClient("asyncssh", "asyncssh", "python3-asyncssh", "asyncssh_client.py"),
		curlClient(), nodeClient(), rcloneClient(), lftpClient(), gitClient(), rsyncClient(), xcryptoClient(),
	}
}

// outcome of one op in one cell.
type outcome struct {
	status string // pass, FAIL, n/a, xfail
	detail string
}

// results collects outcomes for the table.
type results struct {
	mu         sync.Mutex
	versions   map[string]string
	outcomes   map[string]outcome // client / cell / op
	negotiated map[string]string  // client / cell
}

func key(parts ...string) string { return strings.Join(parts, " / ") }

func (r *results) set(k string, o outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes[k] = o
}

// TestMatrix runs every client in every cell (see the package doc).
func TestMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the interop matrix takes minutes; not in -short")
	}
	e := newEnv(t)
	res := &results{versions: map[string]string{}, outcomes: map[string]outcome{}, negotiated: map[string]string{}}
	sem := make(chan struct{}, max(*parallel, 1))
	start := time.Now()
	clients := allClients()
	t.Run("clients", func(t *testing.T) {
		for _, cl := range clients {
			t.Run(cl.name, func(t *testing.T) {
				t.Parallel()
				tools := lookTools(t, cl)
				v := cl.version(t)
				res.mu.Lock()
				res.versions[cl.name] = v
				res.mu.Unlock()
				for _, c := range cells() {
					t.Run(c.name, func(t *testing.T) {
						t.Parallel()
						sem <- struct{}{}
						defer func() { <-sem }()
						runCell(t, e, cl, c, maps.Clone(tools), res)
					})
				}
			})
		}
	})
	t.Logf("matrix: %d clients × %d cells in %v", len(clients), len(cells()), time.Since(start).Round(time.Second))
	if *writeTable != "" {
		if err := os.WriteFile(*writeTable, []byte(markdown(clients, res)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

func runCell(t *testing.T, e *env, cl *client, c cell, tools map[string]string, res *results) {
	if c.clientRekey && !cl.rekey {
		res.set(key(cl.name, c.name, "*"), outcome{status: "n/a", detail: "the client has no setting to re-key"})
		return
	}
	s := e.startServer(t, c)
	slug := slugRE.ReplaceAllString(strings.ToLower(cl.name+"-"+c.name), "-")
	a := &attempt{e: e, c: c, s: s, remote: e.remoteDir(t, slug), local: t.TempDir(), tools: tools}
	ranData := false
	for _, o := range cl.ops {
		if c.dataOnly() && !o.data || o.defaultsOnly && c.axis != "defaults" {
			continue
		}
		// A key exchange or host key changes only the handshake: one
		// checked upload shows it works; the other ops run on defaults.
		if c.handshakeOnly() && (!o.data || ranData) {
			continue
		}
		ranData = ranData || o.data
		mark := s.log.mark()
		err := runOp(t, o, a, s, mark)
		recs := s.log.since(mark)
		out := judge(cl, c, err, recs)
		if n := negotiated(recs); n != "" {
			res.mu.Lock()
			res.negotiated[key(cl.name, c.name)] = n
			res.mu.Unlock()
		}
		out = expect(t, cl.name, c.name, o.name, out)
		res.set(key(cl.name, c.name, o.name), out)
	}
}

// runOp runs an op under the watchdog (opContext) and waits until the
// server has logged the end of its connections: a failed negotiation is
// told by the server's line, which can come after the client has given
// up, and a client's last re-exchange is logged as it ends.
func runOp(t *testing.T, o op, a *attempt, s *server, mark int) error {
	ctx, cancel := opContext(t, &a.prog)
	err := o.run(ctx, a)
	cancel()
	s.settle(t, mark, err == nil)
	return err
}

// judge turns an op's error and the server's log into an outcome.
func judge(cl *client, c cell, err error, recs []record) outcome {
	if err != nil {
		detail := err.Error()
		if p := problems(recs); p != "" {
			detail += "\nserver: " + p
		}
		if c.axis == "defaults" {
			return outcome{status: "FAIL", detail: detail}
		}
		if nc := noCommon(recs); nc != "" {
			return outcome{status: "n/a", detail: nc}
		}
		for _, m := range cl.noCommon {
			if strings.Contains(detail, m) {
				return outcome{status: "n/a", detail: "no common algorithm (the client says: " + firstLineOf(err.Error()) + ")"}
			}
		}
		return outcome{status: "FAIL", detail: detail}
	}
	byServer, byClient := rekeys(recs)
	switch {
	case c.serverRekey && byServer == 0:
		return outcome{status: "FAIL", detail: "no key re-exchange started by the server in its log"}
	case c.clientRekey && byClient == 0:
		return outcome{status: "FAIL", detail: fmt.Sprintf("no key re-exchange started by the client in the server's log (%d by the server)", byServer)}
	}
	return outcome{status: "pass"}
}

// expect applies the known failures: a marked op must fail with its
// reason; an unmarked one must not fail.
func expect(t *testing.T, client, cellName, opName string, o outcome) outcome {
	t.Helper()
	k := lookupKnown(client, cellName, opName)
	switch {
	case k == nil && o.status == "FAIL":
		t.Errorf("%s: %s", opName, o.detail)
	case k != nil && o.status != "FAIL":
		t.Errorf("%s: marked as failing (%s: %q) but it is %s now: remove the mark in known_test.go", opName, k.issue, k.reason, o.status)
	case k != nil && !strings.Contains(o.detail, k.reason):
		t.Errorf("%s: marked as failing with %q (%s), but failed otherwise: %s", opName, k.reason, k.issue, o.detail)
	case k != nil:
		t.Logf("%s: known failure (%s): %s", opName, k.issue, tail(o.detail, 300))
		return outcome{status: "xfail", detail: k.issue + ": " + k.reason}
	}
	if o.status == "n/a" {
		t.Logf("%s: n/a: %s", opName, o.detail)
	}
	return o
}

// markdown renders the results: the versions, then per client a table of
// cells × ops.
func markdown(clients []*client, r *results) string {
	var b strings.Builder
	b.WriteString(tableHeader)
	b.WriteString("\n## Clients\n\n| client | version |\n|---|---|\n")
	for _, cl := range clients {
		fmt.Fprintf(&b, "| %s | %s |\n", cl.name, strings.ReplaceAll(r.versions[cl.name], "|", "\\|"))
	}
	notes := map[string]int{}
	var noteList []string
	note := func(s string) string {
		if _, ok := notes[s]; !ok {
			noteList = append(noteList, s)
			notes[s] = len(noteList)
		}
		return fmt.Sprintf("[%d]", notes[s])
	}
	for _, cl := range clients {
		fmt.Fprintf(&b, "\n## %s\n\n| cell |", cl.name)
		for _, o := range cl.ops {
			fmt.Fprintf(&b, " %s |", o.name)
		}
		b.WriteString(" negotiated (kex, host key, cipher) |\n|---|")
		b.WriteString(strings.Repeat("---|", len(cl.ops)+1))
		b.WriteString("\n")
		for _, c := range cells() {
			fmt.Fprintf(&b, "| %s |", c.name)
			all, whole := r.outcomes[key(cl.name, c.name, "*")]
			for _, o := range cl.ops {
				out, ok := r.outcomes[key(cl.name, c.name, o.name)]
				if whole {
					out, ok = all, true
				}
				switch {
				case !ok:
					b.WriteString(" – |")
				case out.status == "pass":
					b.WriteString(" pass |")
				case out.status == "n/a" && strings.Contains(out.detail, "no common"):
					b.WriteString(" n/a |")
				default:
					fmt.Fprintf(&b, " %s %s |", out.status, note(firstLineOf(out.detail)))
				}
			}
			fmt.Fprintf(&b, " %s |\n", r.negotiated[key(cl.name, c.name)])
		}
	}
	if len(noteList) > 0 {
		b.WriteString("\n## Notes\n\n")
		for i, n := range noteList {
			fmt.Fprintf(&b, "%d. %s\n", i+1, strings.ReplaceAll(n, "|", "\\|"))
		}
	}
	return b.String()
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return tail(line, 400)
}

// tableHeader opens docs/interop.md.
const tableHeader = `# Interoperability with SSH clients

This page is generated: ` + "`go test ./test/interop -run TestMatrix -args -write-table $PWD/docs/interop.md`" + `
(run from the repository root) rewrites it. Do not edit it by hand.

Each client meets offload's server (in process, on 127.0.0.1) in every
cell: the server's defaults; one server per cipher (with each MAC where
the cipher needs one), per key exchange and per host-key algorithm (a file
key, and a key in a SoftHSM token), each offering only that algorithm on
its axis and everything offload supports on the others; a server that
re-keys every 256 KiB ("rekey by server"); the client told to re-key by
itself ("rekey by client", where it has such a setting; the server's log
must show a re-exchange the client started); and an RSA user key. In each
cell the client runs a remote command, uploads a 1 MiB random file (the
stored copy must have the same SHA-256), and puts and gets it over SFTP,
as far as it has each. The rekey cells run only the transfers; the key
exchange and host-key cells, which change only the handshake, run the
client's first transfer (its other ops are covered by the defaults,
cipher, rekey and user-key rows), to keep the suite within minutes.

- **pass**: done and checked.
- **n/a**: the client offered nothing the cell's server offers (the
  server's log says "no common ..."): it cannot negotiate that algorithm.
  On the defaults row that would be a failure.
- **xfail**: a known failure, marked in test/interop/known_test.go with the
  reason the failure must show; it fails the test once it passes, so the
  mark goes when the fix lands.
- **FAIL**: an unexpected failure; the test fails too.
- **–**: not run in this cell.
`
