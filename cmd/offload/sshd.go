package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/config"
	"github.com/offload/offload/sshd/sshlog"
	"github.com/offload/offload/sshd/transport"
)

// DefaultSshdConfig is read when -f is not given and the file exists.
const DefaultSshdConfig = "/etc/offload/sshd_config"

// defaultShutdownTimeout is how long SIGTERM lets sessions finish.
const defaultShutdownTimeout = 30 * time.Second

// sshdOptions are the command-line flags of offload sshd.
type sshdOptions struct {
	file            string
	overrides       listFlag // -o Keyword=value, in order
	ports           listFlag // -p port
	test            bool     // -t
	print           bool     // -T
	connSpec        string   // -C: the connection -T evaluates Match for
	debug           int      // -d, repeatable
	inetd           bool     // -i
	stderr          bool     // -e: log to stderr even with SyslogFacility
	logFile         string   // -E
	foreground      bool     // -D: do not detach
	daemonized      bool     // this process is the daemon detach started
	ready           func()   // tells the command that detached that the daemon serves
	shutdownTimeout time.Duration
	cpuProfile      string // -cpuprofile

	level *slog.LevelVar // the log level, which a reload may change
	log   *slog.Logger   // where configuration warnings go, once set
}

// errVersionShown ends offload sshd -V with status 0.
var errVersionShown = errors.New("version shown")

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// countFlag counts a repeatable boolean flag (-d -d).
type countFlag struct{ n *int }

func (c countFlag) String() string {
	if c.n == nil {
		return "0"
	}
	return strconv.Itoa(*c.n)
}
func (c countFlag) Set(s string) error {
	if v, err := strconv.ParseBool(s); err != nil || v {
		*c.n++
	}
	return nil
}
func (c countFlag) IsBoolFlag() bool { return true }

func parseSshdFlags(args []string, stderr io.Writer) (*sshdOptions, error) {
	o := &sshdOptions{}
	fs := newFlagSet("sshd", stderr)
	fs.StringVar(&o.file, "f", "", "configuration `file` (default "+DefaultSshdConfig+" when it exists)")
	fs.Var(&o.overrides, "o", "`Keyword=value` override; wins over the file; repeatable")
	fs.Var(&o.ports, "p", "`port` to listen on, replacing the file's Port lines; repeatable")
	fs.BoolVar(&o.test, "t", false, "check the configuration and that the host keys open, then exit")
	fs.BoolVar(&o.print, "T", false, "print the effective configuration and which provider serves each algorithm, then exit")
	fs.StringVar(&o.connSpec, "C", "", "with -T: evaluate Match for the `connection` user=,host=,addr=,laddr=,lport=,rdomain=[,invalid-user]")
	fs.Var(countFlag{&o.debug}, "d", "debug: stay in the foreground and log at debug level to stderr")
	fs.BoolVar(&o.inetd, "i", false, "inetd mode: serve one connection on stdin/stdout")
	fs.StringVar(&o.logFile, "E", "", "append logs to `file` instead of stderr")
	fs.BoolVar(&o.foreground, "D", false, "do not detach: stay in the foreground (without -D, -d, -i, -t or -T, offload sshd becomes a daemon once it listens)")
	fs.BoolVar(&o.stderr, "e", false, "log to stderr even when SyslogFacility sends logs to syslog")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", defaultShutdownTimeout, "on SIGTERM, in the in-process mode (PrivilegeSeparation no), how long sessions may finish before they are disconnected; a separated server hands them to a session keeper")
	version := fs.Bool("V", false, "print the version and exit")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the server's whole run to `file` (for benchmarks)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: offload sshd [-f file] [-o Keyword=value]... [-p port]... [-t | -T [-C spec]] [-D] [-d] [-e] [-i] [-E logfile]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(sshdArgs(args)); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	if *version {
		// as sshd -V: the version on stderr, status 0
		fmt.Fprintf(stderr, "offload %s (%s)\n", Version, transport.DefaultVersion)
		return nil, errVersionShown
	}
	if o.test && o.print {
		o.test = false // -T checks too
	}
	if o.connSpec != "" && !o.print {
		return nil, usagef("-C needs -T")
	}
	for _, p := range o.ports {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, usagef("-p %q: not a port", p)
		}
	}
	if o.file == "" {
		if _, err := os.Stat(DefaultSshdConfig); err == nil {
			o.file = DefaultSshdConfig
		}
	}
	return o, nil
}

// sshdArgs rewrites sshd's getopt spellings for the flag package:
// "-p2222", "-oPort=22" and "-E/tmp/log" become two arguments, and
// grouped switches such as "-ddd" or "-dD" become one argument each.
func sshdArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case len(a) < 3 || a[0] != '-' || a[1] == '-':
			out = append(out, a)
		case strings.IndexByte("fopEC", a[1]) >= 0 && a[2] != '=':
			out = append(out, a[:2], a[2:])
		case strings.Trim(a[1:], "dDeitTV") == "":
			for _, c := range a[1:] {
				out = append(out, "-"+string(c))
			}
		default:
			out = append(out, a)
		}
	}
	return out
}

// loadConfig reads the file with the overrides; -p counts as -o Port.
// Its warnings (deprecated keywords, algorithms offload lacks) are logged
// once the logger is set, as sshd logs them at each start and reload.
func (o *sshdOptions) loadConfig() (*config.Config, error) {
	overrides := make([]string, 0, len(o.ports)+len(o.overrides))
	for _, p := range o.ports {
		overrides = append(overrides, "Port="+p)
	}
	overrides = append(overrides, o.overrides...)
	c, err := config.Load(o.file, overrides)
	if err == nil && o.log != nil {
		for _, w := range c.Warnings() {
			o.log.Log(context.Background(), max(w.Level, slog.LevelDebug), w.String())
		}
	}
	return c, err
}

// cmdSshd is `offload sshd`: the SSH server with the configuration of an
// sshd_config-style file.
func cmdSshd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseSshdFlags(args, stderr)
	if errors.Is(err, errVersionShown) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.detaches() {
		return detach(stderr)
	}
	o.daemonized, o.ready = detachedReady()
	log, closeLog, err := o.logger(stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	o.log = log
	stop, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	switch {
	case o.test || o.print:
		return checkSshd(ctx, o, stdout, log)
	case o.inetd:
		return serveInetd(ctx, o, log)
	}
	return runDaemon(ctx, o, log)
}

// logger returns the logger: text to stderr (or the -E file), or to
// syslog when the configuration sets SyslogFacility (as sshd, unless -d,
// -e, -E, -t, -T or -i without -E). The level is debug with -d, otherwise
// the configuration's LogLevel; -t and -T log warnings only, so their
// output stays readable. Records pass a level filter (o.level) over a
// handler that takes every level, so that a connection's own LogLevel
// (Match) can be higher or lower (withLevel).
func (o *sshdOptions) logger(stderr io.Writer) (*slog.Logger, func(), error) {
	c, cerr := o.loadConfig()
	h, closeFn, err := o.logHandler(stderr, c)
	if err != nil {
		return nil, nil, err
	}
	level := slog.LevelInfo
	switch {
	case o.debug > 0:
		level = slog.LevelDebug
	case o.test || o.print:
		level = slog.LevelWarn
	case o.inetd && o.logFile == "":
		// stderr may be the client's terminal (ProxyCommand) or the
		// connection itself (inetd): errors only, as sshd -i sends its
		// logs to syslog rather than there. -E or -d for more.
		level = slog.LevelError
	case cerr == nil:
		level = c.SlogLevel()
	}
	o.level = new(slog.LevelVar)
	o.level.Set(level)
	return slog.New(&levelHandler{inner: h, level: o.level}), closeFn, nil
}

// logHandler is where logs go, and in which format: OpenSSH's lines
// (sshlog) with the syslog time, host and sshd[PID] prefix in a -E file,
// bare on a stderr that journald reads (JOURNAL_STREAM set; journald adds
// the prefix itself) and in syslog with SyslogFacility or when detached
// (without -D, -d or -e: SyslogFacility's default, AUTH), so that fail2ban
// and other readers of sshd logs read offload's; otherwise slog's text
// format on stderr. The handler takes every level: the caller's filter
// decides.
func (o *sshdOptions) logHandler(stderr io.Writer, c *config.Config) (slog.Handler, func(), error) {
	all := slog.LevelDebug - 4
	if o.logFile != "" {
		f, err := os.OpenFile(o.logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, nil, fmt.Errorf("-E: %w", err)
		}
		return sshlog.NewHandler(f, &sshlog.Options{Format: sshlog.Syslog, Level: all}), func() { f.Close() }, nil
	}
	toStderr := o.debug > 0 || o.stderr || o.test || o.print || o.inetd || c == nil
	fac := syslogFacility(c)
	if o.daemonized && c != nil && fac == "" {
		fac = strings.ToUpper(c.SyslogFacility) // a detached daemon logs to syslog, AUTH by default, as sshd
	}
	if !toStderr && fac != "" {
		rt, closeFn, err := newFacilityRouter(fac, "", "") // internal-sftp -f: its own facility
		if err != nil {
			return nil, nil, err
		}
		return rt, closeFn, nil
	}
	if os.Getenv("JOURNAL_STREAM") != "" {
		return sshlog.NewHandler(stderr, &sshlog.Options{Format: sshlog.Bare, Level: all}), func() {}, nil
	}
	return slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: all}), func() {}, nil
}

// setLevel applies a reloaded configuration's LogLevel, unless -d fixed
// the level at debug.
func (o *sshdOptions) setLevel(c *config.Config) {
	if o.level != nil && o.debug == 0 {
		o.level.Set(c.SlogLevel())
	}
}

// checkSshd is -t and -T: everything a start does except listening. -T
// prints the effective configuration, for the -C connection when given
// (its Match blocks applied).
func checkSshd(ctx context.Context, o *sshdOptions, stdout io.Writer, log *slog.Logger) error {
	if !o.print {
		g, err := loadGeneration(ctx, o, nil, nil, log)
		if err != nil {
			return err
		}
		g.retire()
		return nil
	}
	c, err := o.loadConfig()
	if err != nil {
		return err
	}
	eff := c
	if o.connSpec != "" {
		ci, err := config.ParseConnSpec(o.connSpec)
		if err != nil {
			return err
		}
		if eff, err = c.ForConnection(ci); err != nil {
			log.Warn("Match evaluation", "err", err)
		}
	}
	return printConfig(ctx, stdout, eff, log)
}

// printConfig opens what eff names, as a start would, and prints it.
func printConfig(ctx context.Context, stdout io.Writer, eff *config.Config, log *slog.Logger) error {
	reg, err := sshdRegistry(eff, nil, log)
	if err != nil {
		return err
	}
	defer reg.Close()
	keys, err := openHostKeys(ctx, eff, reg, log)
	if err != nil {
		return err
	}
	sc, err := buildServerConfig(eff, reg, signers(keys), log)
	if err != nil {
		return err
	}
	srv, err := sshd.NewServer(sc)
	if err != nil {
		return err
	}
	defer srv.Shutdown(context.Background())
	return printEffective(stdout, eff, reg, keys, srv.Transport(), srv.Plan())
}

// serveInetd serves the one connection on stdin/stdout (-i). SIGTERM
// disconnects it. A connection that ends before a login (a client of
// another protocol version, a failed key exchange or authentication)
// ends the command with status 255, as sshd -i.
func serveInetd(ctx context.Context, o *sshdOptions, log *slog.Logger) error {
	g, err := loadGeneration(ctx, o, nil, nil, log)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			expired, cancel := context.WithCancel(context.Background())
			cancel()
			g.srv.Shutdown(expired)
		case <-done:
		}
	}()
	nc := stdioConn()
	keepAlive(nc, g.cfg.TCPKeepAlive)
	g.srv.ServeConn(nc)
	close(done)
	g.srv.Shutdown(context.Background())
	err = g.reg.Close()
	if g.srv.FailedBeforeLogin() > 0 {
		return exitStatus(255) // as sshd -i: the log says why
	}
	return err
}
