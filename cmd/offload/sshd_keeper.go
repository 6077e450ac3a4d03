package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/monitor"
	"github.com/offload/offload/sshd/sandbox"
	"github.com/offload/offload/sshd/wire"
)

// Restarts keep sessions (docs/architecture.md, "Restarts"). On SIGTERM a
// separated daemon detaches its post-auth processes (sshd.Server.Detach)
// and starts a session keeper — this program again, with the role
// keeperRole, the hand-over's sockets from fd 4 on and a small state on
// fd 3 — then exits, so that a new daemon can listen. The keeper opens
// the configuration and host keys again (a token's module with them),
// signs the sessions' key re-exchanges, writes their login records and
// exits when the last one has ended. It holds no listener, no PidFile
// and no systemd notification socket.

// keeperRole is the value of ipc.RoleEnv that runs a session keeper.
const keeperRole = "sshd-keeper"

// maxKeeperState bounds the state a keeper reads from fd 3.
const maxKeeperState = 64 << 20

// keeperState is what the daemon passes to its session keeper, in the
// SSH wire types of every message between offload's processes.
type keeperState struct {
	Args     []string // the daemon's sshd flags: where its configuration is
	Handover []byte   // monitor.Handover.State
	Files    int      // descriptors from fd 4 on
}

// Bounds of a decoded keeperState.
const (
	maxKeeperArgs  = 256
	maxKeeperArg   = 4 << 10
	maxKeeperFiles = 1 << 20
)

func (st *keeperState) marshal() []byte {
	b := wire.AppendUint32(nil, uint32(len(st.Args)))
	for _, a := range st.Args {
		b = wire.AppendString(b, a)
	}
	return wire.AppendUint32(wire.AppendBytes(b, st.Handover), uint32(st.Files))
}

func parseKeeperState(p []byte) (*keeperState, error) {
	r := wire.NewReader(p)
	st := &keeperState{}
	for i, n := 0, r.Count("args", maxKeeperArgs); i < n && r.Err() == nil; i++ {
		st.Args = append(st.Args, r.StringMax("arg", maxKeeperArg))
	}
	st.Handover = r.BytesMax("hand-over", maxKeeperState)
	if n := r.Uint32("files"); n <= maxKeeperFiles {
		st.Files = int(n)
	} else {
		r.Fail("files", fmt.Errorf("%d, at most %d", n, maxKeeperFiles))
	}
	if err := r.Done(); err != nil {
		return nil, err
	}
	return st, nil
}

// keepSessions hands the sessions of every separated generation to a
// session keeper. Generations in the in-process mode keep the old
// behaviour: their sessions may finish until the shutdown timeout.
func (d *daemon) keepSessions(live []*generation) {
	for _, g := range live {
		if g.srv == nil || !g.cfg.PrivilegeSeparation {
			continue
		}
		h, err := g.srv.Detach()
		if err != nil || h == nil {
			if err != nil && !errors.Is(err, monitor.ErrClosed) {
				d.log.Error("sessions cannot be kept across the restart", "err", err)
			}
			continue
		}
		pid, err := startKeeper(d.o, h)
		h.Close()
		if err != nil {
			d.log.Error("session keeper did not start; the sessions go on until their next key re-exchange", "err", err)
			continue
		}
		d.log.Info("sessions handed to the session keeper", "keeper_pid", pid, "connections", h.Conns)
	}
}

// startKeeper starts a session keeper with the hand-over and returns its
// process id.
func startKeeper(o *sshdOptions, h *monitor.Handover) (int, error) {
	st := (&keeperState{Args: keeperArgs(o), Handover: h.State, Files: len(h.Files)}).marshal()
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	dir, err := os.Getwd() // relative paths in the flags and the configuration mean what they meant
	if err != nil {
		dir = "/"
	}
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{"offload-sshd-keeper"}, Dir: dir,
		Env: keeperEnv(), ExtraFiles: append([]*os.File{r}, h.Files...), Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		w.Close()
		return 0, fmt.Errorf("session keeper: %w", err)
	}
	pid := cmd.Process.Pid
	cmd.Process.Release() // it outlives this process; init reaps it
	_, err = w.Write(st)
	w.Close()
	if err != nil {
		return pid, fmt.Errorf("session keeper: state: %w", err)
	}
	return pid, nil
}

// keeperArgs are the flags that tell the keeper where the daemon's
// configuration and logs are.
func keeperArgs(o *sshdOptions) []string {
	var args []string
	if o.file != "" {
		args = append(args, "-f", o.file)
	}
	for _, v := range o.overrides {
		args = append(args, "-o", v)
	}
	for _, p := range o.ports {
		args = append(args, "-p", p)
	}
	for i := 0; i < o.debug; i++ {
		args = append(args, "-d")
	}
	if o.stderr {
		args = append(args, "-e")
	}
	if o.logFile != "" {
		args = append(args, "-E", o.logFile)
	}
	return args
}

// keeperEnv is the daemon's environment (a PKCS#11 PIN may come from it)
// without what names systemd's main process, with the keeper's role.
func keeperEnv() []string {
	env := []string{ipc.RoleEnv + "=" + keeperRole}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "WATCHDOG_PID", "WATCHDOG_USEC", ipc.RoleEnv:
			continue
		}
		env = append(env, kv)
	}
	return env
}

// runKeeperIfAsked runs a session keeper and exits when this process was
// started as one; otherwise it returns.
func runKeeperIfAsked() {
	if os.Getenv(ipc.RoleEnv) != keeperRole {
		return
	}
	os.Unsetenv(ipc.RoleEnv)
	sandbox.SetName("sshd-keeper")
	os.Exit(keeperMain())
}

func keeperMain() int {
	f := os.NewFile(3, "keeper-state")
	b, err := io.ReadAll(io.LimitReader(f, maxKeeperState))
	f.Close()
	var st *keeperState
	if err == nil {
		st, err = parseKeeperState(b)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "offload sshd session keeper: state:", err)
		return 1
	}
	h := &monitor.Handover{State: st.Handover}
	for i := 0; i < st.Files; i++ {
		h.Files = append(h.Files, os.NewFile(uintptr(4+i), "post-auth-"+strconv.Itoa(i)))
	}
	o, err := parseSshdFlags(st.Args, io.Discard)
	if err != nil {
		fmt.Fprintln(os.Stderr, "offload sshd session keeper:", err)
		return 1
	}
	log, closeLog, err := o.logger(os.Stderr)
	if err != nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
		closeLog = func() {}
	}
	defer closeLog()
	o.log = log
	return keep(o, h, log)
}

// keep runs the keeper on the hand-over until its last session ends.
// SIGTERM (or SIGINT) disconnects the sessions; SIGHUP is ignored: a
// keeper serves no new connection, so it has nothing to reload.
func keep(o *sshdOptions, h *monitor.Handover, log *slog.Logger) int {
	signal.Ignore(syscall.SIGHUP)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, os.Interrupt)
	ctx := context.Background()
	cfg, closeKeys := keeperConfig(ctx, o, log)
	defer closeKeys()
	m, err := sshd.Keep(cfg, h)
	if err != nil {
		log.Error("session keeper: cannot take the sessions over", "err", err)
		return 1
	}
	log.Info("session keeper: keeping the sessions of the stopped server", "pid", os.Getpid(), "connections", m.Sessions())
	done := make(chan struct{})
	go func() { m.Wait(); close(done) }()
	select {
	case <-done:
	case <-term:
		log.Info("session keeper: SIGTERM: disconnecting the sessions")
		m.EndSessions("server shutting down")
		<-done
	}
	log.Info("session keeper: the last session has ended")
	return 0
}

// keeperConfig opens the configuration and host keys again for the
// keeper. When they do not open (the file changed and is broken, a token
// is gone) the keeper still keeps the sessions, without host keys.
func keeperConfig(ctx context.Context, o *sshdOptions, log *slog.Logger) (*sshd.Config, func()) {
	fallback := &sshd.Config{Logger: log}
	c, err := o.loadConfig()
	if err != nil {
		log.Error("session keeper: configuration; key re-exchanges will fail", "err", err)
		return fallback, func() {}
	}
	reg, err := sshdRegistry(c, nil, log)
	if err != nil {
		log.Error("session keeper: providers; key re-exchanges will fail", "err", err)
		return fallback, func() {}
	}
	keys, err := openHostKeys(ctx, c, reg, log)
	if err != nil {
		log.Error("session keeper: host keys; key re-exchanges will fail", "err", err)
		return &sshd.Config{Logger: log, Registry: reg}, func() { reg.Close() }
	}
	cfg, err := buildServerConfig(c, reg, signers(keys), log)
	if err != nil {
		log.Warn("session keeper: configuration", "err", err)
		cfg = &sshd.Config{Logger: log, Registry: reg, HostKeys: signers(keys)}
	}
	cfg.Separation = &sshd.Separation{}
	if o.level != nil {
		cfg.Separation.LogLevel = o.level.Level()
	}
	return cfg, func() { reg.Close() }
}
