package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/offload/offload/internal/rawio"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/config"
)

// generation is one loaded configuration: its registry, host keys and
// server. A reload makes a new generation for new connections; the old one
// lives until its last connection ends.
type generation struct {
	cfg  *config.Config
	reg  *provider.Registry
	keys []hostKey
	srv  *sshd.Server
	wg   sync.WaitGroup // connections served by this generation
}

// loadGeneration reads the configuration and opens everything it names.
func loadGeneration(ctx context.Context, o *sshdOptions, metrics *provider.Metrics, stats *daemonStats, log *slog.Logger) (*generation, error) {
	c, err := o.loadConfig()
	if err != nil {
		return nil, err
	}
	reg, err := sshdRegistry(c, metrics, log)
	if err != nil {
		return nil, err
	}
	g := &generation{cfg: c, reg: reg}
	if err := g.open(ctx, o, stats, log); err != nil {
		reg.Close()
		return nil, err
	}
	return g, nil
}

func (g *generation) open(ctx context.Context, o *sshdOptions, stats *daemonStats, log *slog.Logger) error {
	var err error
	if g.keys, err = openHostKeys(ctx, g.cfg, g.reg, log); err != nil {
		return err
	}
	sc, err := serverConfig(g.cfg, g.reg, signers(g.keys), log)
	if err != nil {
		return err
	}
	sc.Separation = separation(sc.Separation, o, stats)
	if stats != nil && sc.Auth != nil {
		sc.Auth.OnResult = stats.loginResult
	}
	setMonitorProcs(sc.Separation != nil)
	g.srv, err = sshd.NewServer(sc)
	return err
}

// setMonitorProcs runs a separated server's monitor on a third of the
// CPUs the runtime would use (at least one), and an in-process server on
// all of them; a GOMAXPROCS in the environment is left alone. The
// monitor's part of a login (a signature, a verification, two small file
// reads) is about a third of the login's server CPU; on fewer threads the
// runtime wakes fewer of them for each of its short requests: at 16
// clients on 2 CPUs, 9% less server CPU per handshake (docs/benchmarks.md).
func setMonitorProcs(separated bool) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.SetDefaultGOMAXPROCS() // CPUs, or a container's CPU limit
	if separated {
		runtime.GOMAXPROCS(max(1, runtime.GOMAXPROCS(0)/3))
	}
}

// separation completes the process model of a server that will serve:
// -t and -T start no children; inetd mode, which serves one connection,
// one worker; the daemon counts the children's bytes.
func separation(s *sshd.Separation, o *sshdOptions, stats *daemonStats) *sshd.Separation {
	if s == nil || o.test || o.print {
		return nil
	}
	if stats != nil {
		s.OnConnEnd = stats.connEnded
	}
	if o.level != nil {
		s.LogLevel = o.level.Level()
	}
	if o.inetd {
		s.Workers = 1
	}
	return s
}

// retire waits for the generation's last connection to end, then stops
// its server and closes its registry (token sessions with it). Only a
// generation that can gain no more connections may retire.
func (g *generation) retire() {
	g.wg.Wait()
	if g.srv != nil {
		g.srv.Shutdown(context.Background())
	}
	g.reg.Close()
}

// daemon accepts on its listeners and hands each connection to the
// current generation.
type daemon struct {
	o       *sshdOptions
	log     *slog.Logger
	metrics *provider.Metrics
	stats   daemonStats

	mu        sync.Mutex
	cur       *generation
	live      []*generation
	listeners []net.Listener
	listenKey []string // network and configured address of each listener
	closing   bool
	conns     sync.WaitGroup

	metricsAddr string             // where /metrics is served, "" for nowhere
	stopMetrics context.CancelFunc // stops the /metrics listener
	removePid   func()
	notify      *notifier // systemd's NOTIFY_SOCKET (Type=notify)
	hup         chan os.Signal
	retired     sync.WaitGroup
}

// runDaemon listens and serves until ctx is done (SIGTERM, SIGINT), then
// shuts down gracefully. SIGHUP reloads.
func runDaemon(ctx context.Context, o *sshdOptions, log *slog.Logger) error {
	d, err := startDaemon(ctx, o, log)
	if err != nil {
		return err
	}
	defer d.removePid()
	if o.ready != nil {
		o.ready() // detached: the command that started this daemon returns
	}
	d.loop(ctx)
	return nil
}

// startDaemon loads the configuration, listens, starts the metrics
// listener and writes the PidFile.
func startDaemon(ctx context.Context, o *sshdOptions, log *slog.Logger) (*daemon, error) {
	d := &daemon{o: o, log: log, metrics: provider.NewMetrics(), hup: make(chan os.Signal, 1), notify: newNotifier()}
	// From here on SIGHUP waits for the loop instead of killing the process.
	signal.Notify(d.hup, syscall.SIGHUP)
	if err := d.start(ctx); err != nil {
		signal.Stop(d.hup)
		return nil, err
	}
	return d, nil
}

func (d *daemon) start(ctx context.Context) error {
	o, log := d.o, d.log
	g, err := loadGeneration(ctx, o, d.metrics, &d.stats, log)
	if err != nil {
		return err
	}
	d.cur, d.live = g, []*generation{g}
	ls, keys, err := startListeners(g.cfg, log)
	if err != nil {
		g.retire()
		return err
	}
	d.addListeners(ls, keys)
	if err := d.startMetrics(ctx, g.cfg.MetricsAddress); err != nil {
		d.stop(0)
		return err
	}
	if d.removePid, err = writePidFile(g.cfg.PidFile); err != nil {
		d.stop(0)
		return err
	}
	log.Info("offload sshd started", "pid", os.Getpid(), "hostkeys", configSummary(g.cfg, g.keys))
	d.notifyErr(d.notify.Ready("serving"))
	return nil
}

// listenKeys names the listeners a configuration wants: "network addr".
func listenKeys(c *config.Config) []string {
	var keys []string
	for _, a := range c.Addrs() {
		keys = append(keys, c.ListenNetwork()+" "+a)
	}
	return keys
}

// openListeners opens a listener for each key not in have. On an error it
// closes what it opened.
func openListeners(keys, have []string) ([]net.Listener, []string, error) {
	var ls []net.Listener
	var opened []string
	for _, k := range keys {
		if slices.Contains(have, k) {
			continue
		}
		network, addr, _ := strings.Cut(k, " ")
		l, err := listenConfig.Listen(context.Background(), network, addr)
		if err != nil {
			for _, o := range ls {
				o.Close()
			}
			return nil, nil, fmt.Errorf("listen: %w", err)
		}
		ls, opened = append(ls, l), append(opened, k)
	}
	return ls, opened, nil
}

// addListeners starts accepting on ls.
func (d *daemon) addListeners(ls []net.Listener, keys []string) {
	d.mu.Lock()
	d.listeners = append(d.listeners, ls...)
	d.listenKey = append(d.listenKey, keys...)
	d.mu.Unlock()
	for _, l := range ls {
		d.log.Info("listening", "addr", l.Addr().String())
		go d.accept(l)
	}
}

// dropListeners closes the listeners whose keys are not in keep.
func (d *daemon) dropListeners(keep []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := 0; i < len(d.listeners); i++ {
		if !slices.Contains(keep, d.listenKey[i]) {
			d.log.Info("no longer listening", "addr", d.listeners[i].Addr().String())
			d.listeners[i].Close()
			d.listeners = slices.Delete(d.listeners, i, i+1)
			d.listenKey = slices.Delete(d.listenKey, i, i+1)
			i--
		}
	}
}

func (d *daemon) currentKeys() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.listenKey)
}

// loop waits for signals: SIGHUP reloads, the end of ctx stops.
func (d *daemon) loop(ctx context.Context) {
	defer signal.Stop(d.hup)
	for {
		select {
		case <-d.hup:
			d.reload(ctx)
		case <-ctx.Done():
			// The PidFile goes when the listening stops, as sshd's does
			// when its listener exits (sessions drain after it).
			d.removePid()
			d.log.Info("shutting down: no new connections; waiting for sessions", "timeout", d.o.shutdownTimeout)
			d.stop(d.o.shutdownTimeout)
			return
		}
	}
}

func (d *daemon) accept(l net.Listener) {
	sshd.AcceptLoop(l, d.serve, d.log)
}

// serve hands nc to the current generation. A separated server passes
// the socket itself to its processes, so bytes are not counted here.
func (d *daemon) serve(nc net.Conn) {
	g := d.take()
	if g == nil {
		nc.Close()
		return
	}
	keepAlive(nc, g.cfg.TCPKeepAlive)
	d.stats.accepted.Add(1)
	d.stats.active.Add(1)
	go func() {
		defer d.conns.Done()
		defer g.wg.Done()
		defer d.stats.active.Add(-1)
		if g.cfg.PrivilegeSeparation {
			g.srv.ServeConn(nc)
			return
		}
		cc := &countedConn{Conn: rawio.WrapConn(nc), stats: &d.stats}
		start := time.Now()
		g.srv.ServeConn(cc)
		d.log.Debug("connection ended", "remote", nc.RemoteAddr().String(), "duration", time.Since(start),
			"bytes_in", cc.rx.Load(), "bytes_out", cc.tx.Load())
	}()
}

// take counts a new connection against the current generation. Holding
// mu makes it impossible for a retired generation to gain a connection
// after its retirement began waiting for the last one.
func (d *daemon) take() *generation {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closing {
		return nil
	}
	d.conns.Add(1)
	d.cur.wg.Add(1)
	return d.cur
}

func (d *daemon) isClosing() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closing
}

// reload re-reads the configuration and host keys for new connections,
// and listens where it now says. A configuration that fails to load, or
// an address that cannot be listened on, is logged and the running
// configuration kept.
func (d *daemon) reload(ctx context.Context) {
	d.log.Info("SIGHUP: reloading configuration", "file", d.o.file)
	d.notifyErr(d.notify.Reloading())
	defer func() { d.notifyErr(d.notify.Ready("serving")) }()
	defer d.rewritePid()
	g, err := loadGeneration(ctx, d.o, d.metrics, &d.stats, d.log)
	if err != nil {
		d.refuse(err)
		return
	}
	keys := wantedListeners(g.cfg, d.currentKeys())
	ls, opened, err := openListeners(keys, d.currentKeys())
	if err != nil {
		g.retire()
		d.refuse(err)
		return
	}
	d.mu.Lock()
	old := d.cur
	d.cur = g
	d.live = append(d.live, g)
	d.mu.Unlock()
	d.addListeners(ls, opened)
	d.dropListeners(keys)
	d.stats.reloads.Add(1)
	if old.cfg.MetricsAddress != g.cfg.MetricsAddress {
		if err := d.startMetrics(ctx, g.cfg.MetricsAddress); err != nil {
			d.log.Error("metrics listener unchanged", "err", err)
		}
	}
	d.o.setLevel(g.cfg)
	d.log.Info("configuration reloaded", "hostkeys", configSummary(g.cfg, g.keys))
	d.retired.Add(1)
	go func() {
		defer d.retired.Done()
		old.retire()
		d.forget(old)
	}()
}

// rewritePid writes the PidFile again after a reload, where the
// configuration now in force says, as sshd's re-exec on SIGHUP does
// (scripts wait for the file to appear again); a file at a former path is
// removed.
func (d *daemon) rewritePid() {
	d.mu.Lock()
	path := d.cur.cfg.PidFile
	d.mu.Unlock()
	d.removePid()
	rm, err := writePidFile(path)
	if err != nil {
		d.log.Error("reload: PidFile not written", "err", err)
		d.removePid = func() {}
		return
	}
	d.removePid = rm
}

// startMetrics serves /metrics on addr ("" for nowhere) in place of the
// listener running now, which stays when the new one cannot start.
func (d *daemon) startMetrics(ctx context.Context, addr string) error {
	if addr == "" {
		d.stopMetricsServer()
		return nil
	}
	mctx, cancel := context.WithCancel(ctx)
	got, err := metricsServer(mctx, addr, d.metrics, &d.stats, d.log)
	if err != nil {
		cancel()
		return fmt.Errorf("MetricsAddress: %w", err)
	}
	d.stopMetricsServer()
	d.metricsAddr, d.stopMetrics = got, cancel
	return nil
}

func (d *daemon) stopMetricsServer() {
	if d.stopMetrics != nil {
		d.stopMetrics()
	}
	d.metricsAddr, d.stopMetrics = "", nil
}

func (d *daemon) refuse(err error) {
	d.stats.reloadErrors.Add(1)
	d.log.Error("reload refused; keeping the running configuration", "err", err)
}

func (d *daemon) forget(g *generation) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.live = slices.DeleteFunc(d.live, func(x *generation) bool { return x == g })
}

// stop closes the listeners, lets connections finish for up to timeout,
// then disconnects the rest and closes every registry. A second SIGINT or
// SIGTERM cuts the wait short.
func (d *daemon) stop(timeout time.Duration) {
	d.notifyErr(d.notify.Stopping())
	d.mu.Lock()
	d.closing = true
	for _, l := range d.listeners {
		l.Close()
	}
	live := slices.Clone(d.live)
	d.mu.Unlock()
	d.keepSessions(live) // sshd_keeper.go: a separated server's sessions outlive it
	if !waitTimeout(&d.conns, timeout) {
		d.log.Warn("shutdown timeout: disconnecting remaining connections", "active", d.stats.active.Load())
	}
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	for _, g := range live {
		g.srv.Shutdown(expired)
	}
	if !waitTimeout(&d.conns, 5*time.Second) {
		d.log.Error("connections did not end after disconnect", "active", d.stats.active.Load())
	}
	for _, g := range live {
		g.reg.Close()
	}
	waitTimeout(&d.retired, 5*time.Second)
	d.log.Info("offload sshd stopped")
}

// waitTimeout waits for wg for up to timeout, or until a second SIGINT or
// SIGTERM. It reports whether wg finished.
func waitTimeout(wg *sync.WaitGroup, timeout time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	case <-sig:
	}
	return false
}

// writePidFile writes the process id to path ("" for none) and returns a
// function that removes the file if it still holds this pid.
func writePidFile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	pid := strconv.Itoa(os.Getpid())
	if err := os.WriteFile(path, []byte(pid+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("PidFile: %w", err)
	}
	return func() {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == pid {
			os.Remove(path)
		}
	}, nil
}
