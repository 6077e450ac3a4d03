// Command offload is the command line of the offload crypto-provider
// framework and its SSH server.
//
// # Commands
//
//	offload sshd         run the SSH server
//	offload keys         keys in PKCS #11 tokens: generate, list, pub, import, delete
//	offload speed        measure providers, shaped like `openssl speed`
//	offload providers    list providers, capabilities and the choice per algorithm
//	offload version      print the version and build
//	offload sftp-server  serve SFTP on stdin/stdout as sftp-server(8)
//	offload help         list the commands, or `offload help COMMAND` for one's flags
//
// Run `offload help COMMAND` (or `offload COMMAND -h`) for the flags of each.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"syscall"

	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/sandbox"
)

// Version is the offload version, set at build time with
// -ldflags "-X main.Version=...".
var Version = "0.1.0-dev"

type command struct {
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	summary string
}

// commands is the table of subcommands.
var commands = map[string]command{
	"sshd":        {cmdSshd, "run the SSH server (sshd_config keywords, host keys in files or tokens)"},
	"keys":        {cmdKeys, "keys in PKCS #11 tokens: generate, list, pub (print the public key), import, delete, migrate (OpenSSH host keys into a token)"},
	"speed":       {cmdSpeed, "measure providers, shaped like `openssl speed`"},
	"providers":   {cmdProviders, "list providers, capabilities and the choice per algorithm"},
	"version":     {cmdVersion, "print the version and build"},
	"sftp-server": {cmdSFTPServer, "serve SFTP on stdin/stdout as sftp-server(8) (the internal-sftp helper)"},
}

// init keeps the main goroutine on the main thread: a PAM keeper
// (a child of offload sshd) opens the session there, because
// pam_loginuid writes /proc/self/loginuid, which only the main thread
// may, and it must start the user's process from that thread.
func init() { runtime.LockOSThread() }

func main() {
	sshd.RunChild() // a child process of offload sshd (privilege separation) runs its role and exits
	runKeeperIfAsked()
	if err := sandbox.CloseOnExec(); err != nil && !errors.Is(err, sandbox.ErrUnsupported) {
		fmt.Fprintln(os.Stderr, "offload:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stderr)
		return 2
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		return help(ctx, args[1:], stdout, stderr)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "offload: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	err := c.run(ctx, args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 2
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "offload %s: %v\n", args[0], err)
		return 2
	}
	var status exitStatus
	if errors.As(err, &status) {
		return int(status) // the detached daemon's own status; it said why
	}
	fmt.Fprintf(stderr, "offload %s: %v\n", args[0], err)
	if args[0] == "sshd" {
		return 255 // as sshd's fatal(): RestartPreventExitStatus=255 keeps systemd from restarting a broken configuration
	}
	return 1
}

// usageError marks errors in the command line rather than in the work.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: offload COMMAND [flags]\n       offload help [COMMAND]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-11s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun `offload help COMMAND` (or `offload COMMAND -h`) for its flags.")
}

// help is `offload help [COMMAND [SUBCOMMAND]]`: the command list, or a
// command's flags, on stdout, exit 0; an unknown command exits 2.
func help(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "offload help: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	err := c.run(ctx, append(append([]string(nil), args[1:]...), "-h"), stdout, stdout)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "offload help %s: %v\n", args[0], err)
	return 2
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("offload "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func cmdVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if err := newFlagSet("version", stderr).Parse(args); err != nil {
		return err
	}
	for _, l := range buildLines() {
		fmt.Fprintln(stdout, l)
	}
	return nil
}
