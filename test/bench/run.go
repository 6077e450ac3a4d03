package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"
)

// run is the whole benchmark: set up, measure, report, clean up.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	t, err := findTools(o.pkcs11)
	if err != nil {
		return err
	}
	w, err := newWorkspace(ctx, t)
	if w != nil {
		defer func() {
			if o.keep {
				fmt.Fprintf(stderr, "bench: kept %s\n", w.Dir)
				return
			}
			err = errors.Join(err, w.remove())
		}()
	}
	if err != nil {
		return err
	}
	rep := &Report{Started: time.Now().UTC(), Settings: o.Settings}
	servers, err := setup(ctx, o, t, w, rep, stderr)
	defer func() { err = errors.Join(err, stopAll(servers)) }()
	if err != nil {
		return err
	}
	if err := measureAll(ctx, o, t, w, servers, rep, stderr); err != nil {
		return err
	}
	return writeOutputs(o.out, rep, stdout)
}

// setup builds offload, makes the token and payload, starts the servers
// and describes the machine.
func setup(ctx context.Context, o *options, t *tools, w *workspace, rep *Report, log io.Writer) ([]*server, error) {
	offload := o.offload
	if offload == "" && o.wantOffload() {
		offload = filepath.Join(w.Dir, "offload")
		fmt.Fprintln(log, "bench: building offload")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", offload, "github.com/offload/offload/cmd/offload").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("bench: go build ./cmd/offload: %v: %s", err, out)
		}
	}
	if o.pkcs11 {
		if err := w.makeToken(ctx, t.SoftHSMUtil); err != nil {
			return nil, err
		}
	}
	if o.wantServer(srvOpenSSH) {
		if err := w.ensurePrivsepDir(); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(log, "bench: writing a %s payload\n", formatSize(o.Size))
	if err := w.writePayload(o.Size); err != nil {
		return nil, err
	}
	var servers []*server
	var ports []int
	if err := o.cpus.pinServers(); err != nil {
		return nil, err
	}
	for _, spec := range serverSpecs(w, t, o.pkcs11) {
		if !o.wantServer(spec.Name) {
			continue
		}
		if !spec.OpenSSH && len(o.extra) > 0 {
			spec.Extra = append(append([]string{}, spec.Extra...), o.extra...)
			spec.Desc += "; plus " + strings.Join(o.extra, "; ")
		}
		sv, err := startServer(ctx, spec, w, t, offload, o.Addr, o.Ciphers)
		if err != nil {
			return servers, err
		}
		fmt.Fprintf(log, "bench: %s listening on %s port %d (pid %d)\n", spec.Name, o.Addr, sv.port, sv.cmd.Process.Pid)
		servers = append(servers, sv)
		ports = append(ports, sv.port)
		rep.Servers = append(rep.Servers, ServerInfo{Name: spec.Name, Desc: spec.Desc, Command: sv.argv, Config: sv.config})
	}
	if len(servers) == 0 {
		return nil, errors.New("bench: no server selected")
	}
	if err := o.cpus.pinClients(); err != nil {
		return servers, err
	}
	rep.Machine = describeMachine(ctx, t, offload)
	return servers, w.writeKnownHosts(o.Addr, ports)
}

// measureAll runs the rounds and fills rep.Cases.
func measureAll(ctx context.Context, o *options, t *tools, w *workspace, servers []*server, rep *Report, log io.Writer) error {
	u, err := user.Current()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	b := &bench{c: &client{t: t, w: w, addr: o.Addr, user: u.Username}, w: w, size: o.Size, timeout: transferTimeout(o.Size),
		settings: o.Settings}
	defer b.closeShapes()
	if err := b.loadClientKeys(); err != nil {
		return err
	}
	if b.perf, err = newPerfRecorder(o.perf); err != nil {
		return err
	}
	specs := make([]serverSpec, len(servers))
	byName := map[string]*server{}
	for i, sv := range servers {
		specs[i] = sv.spec
		byName[sv.spec.Name] = sv
	}
	if err := warmUp(ctx, b, servers, o, log); err != nil {
		return err
	}
	if err := prepareRows(ctx, b, servers, o, rep, log); err != nil {
		return err
	}
	if err := measureProxyCeilings(ctx, o, rep, log); err != nil {
		return err
	}
	plan := makePlan(o.Settings, specs, o.kinds)
	cases := map[string]*Case{}
	start := time.Now()
	for round := range o.Rounds {
		if elapsed := time.Since(start); round > 0 && o.budget > 0 && elapsed+elapsed/time.Duration(round) > o.budget {
			rep.Notes = append(rep.Notes, fmt.Sprintf("stopped after %d of %d rounds: another would pass the -budget of %v", round, o.Rounds, o.budget))
			rep.Settings.Rounds = round
			break
		}
		for _, tk := range plan {
			for _, name := range rotate(tk.Servers, round) {
				if err := ctx.Err(); err != nil {
					return err
				}
				c := caseFor(cases, rep, tk, name)
				runTask(ctx, b, byName[name], tk, c, o, round, log)
			}
		}
	}
	for _, c := range rep.Cases {
		c.summarize()
	}
	rep.Machine.LoadAfter = loadAverage()
	rep.Finished = time.Now().UTC()
	return ctx.Err()
}

// warmUp connects once per server and cipher before anything is timed:
// offload calibrates a cipher's candidates on its first use, inside that
// connection's key exchange, and neither that nor OpenSSH's first exec of
// a cold binary belongs in the figures. A server that cannot serve a
// cipher at all fails the run here, before an hour of measurements.
func warmUp(ctx context.Context, b *bench, servers []*server, o *options, log io.Writer) error {
	for _, sv := range servers {
		for _, c := range append(append([]string{}, o.Ciphers...), o.XferCipher) {
			if !sv.spec.Pipe(c) {
				continue
			}
			wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			_, err := runCmd(wctx, b.c.sshArgs(sv.port, c, "true"), nil, nil)
			cancel()
			if err != nil {
				return fmt.Errorf("bench: warm-up of %s with %s failed (server log: %s): %w", sv.spec.Name, c, sv.logTail(400), err)
			}
		}
		fmt.Fprintf(log, "bench: %s warmed up\n", sv.spec.Name)
	}
	return nil
}

func caseFor(cases map[string]*Case, rep *Report, tk task, server string) *Case {
	k := fmt.Sprintf("%s|%s|%d|%d|%s", tk.Kind, tk.Cipher, tk.Clients, tk.RTTMillis, server)
	if c, ok := cases[k]; ok {
		return c
	}
	c := &Case{Kind: tk.Kind, Cipher: tk.Cipher, Clients: tk.Clients, RTTMillis: tk.RTTMillis, Server: server}
	cases[k] = c
	rep.Cases = append(rep.Cases, c)
	return c
}

// runTask takes one round's samples of a task on one server. A failure
// is recorded in the case and the run goes on.
func runTask(ctx context.Context, b *bench, sv *server, tk task, c *Case, o *options, round int, log io.Writer) {
	prefix := fmt.Sprintf("round %d/%d %s on %s:", round+1, o.Rounds, keyLabel(c.key()), sv.spec.Name)
	record := func(s Sample, err error) {
		if err != nil {
			if ctx.Err() == nil {
				c.Errors = append(c.Errors, err.Error())
				fmt.Fprintf(log, "%s FAILED: %v\n", prefix, err)
			}
			return
		}
		c.Samples = append(c.Samples, s)
	}
	switch {
	case isShape(tk.Kind):
		runShape(ctx, b, sv, tk, record, prefix, log)
	case isTransfer(tk.Kind):
		s, err := b.transfer(ctx, sv, tk.Kind, tk.Cipher)
		record(s, err)
		if err == nil {
			fmt.Fprintf(log, "%s %.2fs, %.0f MB/s, server CPU %.2fs (session programs %.2fs), client CPU %.2fs\n", prefix, s.Seconds,
				float64(s.Bytes)/s.Seconds/1e6, s.CPUSeconds, s.SessionCPUSeconds, s.ClientCPUSeconds)
		}
	case isCompress(tk.Kind), isLibClient(tk.Kind):
		s, err := b.row(ctx, sv, tk)
		record(s, err)
		if err == nil {
			fmt.Fprintf(log, "%s %.2fs, %.0f MB/s, server CPU %.2fs (session programs %.2fs), client CPU %.2fs%s\n", prefix, s.Seconds,
				float64(s.Bytes)/s.Seconds/1e6, s.CPUSeconds, s.SessionCPUSeconds, s.ClientCPUSeconds, rowNote(s))
		}
	case tk.Kind == kindLatency:
		var ms []float64
		for range o.LatencyRuns {
			s, err := b.latency(ctx, sv)
			record(s, err)
			if err != nil {
				break
			}
			ms = append(ms, s.Seconds*1000)
		}
		fmt.Fprintf(log, "%s median %.1f ms over %d runs\n", prefix, median(ms), len(ms))
	case tk.Kind == kindHandshake:
		s, err := b.handshakes(ctx, sv, tk.Clients, max(o.Handshakes, tk.Clients))
		record(s, err)
		if err == nil {
			fmt.Fprintf(log, "%s %d in %.2fs, %.1f/s, server CPU %.2fs\n", prefix, s.Count, s.Seconds, float64(s.Count)/s.Seconds, s.CPUSeconds)
		}
	}
}

// writeOutputs writes results.json, results.md and the plots into dir and
// prints the Markdown to stdout.
func writeOutputs(dir string, rep *Report, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	for name, write := range map[string]func(io.Writer, *Report) error{
		"results.json": writeJSON, "results.md": writeMarkdown,
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		err = write(f, rep)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	files, err := writePlots(dir, rep)
	if err != nil {
		return err
	}
	if err := writeMarkdown(stdout, rep); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s/results.json, %s/results.md and %d plot files\n", dir, dir, len(files))
	return nil
}
