// Command bench measures offload sshd side by side with OpenSSH's sshd on
// loopback and writes the tables and plots of docs/benchmarks.md.
//
//	go run ./test/bench -rounds 3 -size 1GiB -out test/bench/out
//
// # What it measures
//
// Both servers run with the same host key (ed25519), key exchange
// (curve25519-sha256), ciphers, MAC and limits, one throwaway client key
// and a known_hosts of their own. Against each, with the OpenSSH clients:
// pipe upload and download of the payload per cipher, sftp get and put,
// scp (SFTP protocol and legacy -O) up and down, `ssh host true`, and
// handshakes per second with 1..32 concurrent in-process x/crypto/ssh
// clients. offload also runs with CryptoPolicy software-only and with
// AES-GCM pinned to a SoftHSM token through PKCS #11. Only when named
// in -only: compressed pipe transfers (ssh -o Compression=yes, a text
// corpus and the random payload; compress.go) and the library clients
// x/crypto and paramiko on their default algorithms (libclients.go).
//
// Every figure is the median of -rounds rounds; each round runs every
// benchmark on every server, rotating which server goes first. Server CPU
// is the utime+stime of the server process and all its descendants from
// /proc, read before and after each run once the connection's processes
// have exited.
//
// # Output
//
// In -out: results.json (every sample), results.md (tables with ratios to
// OpenSSH) and SVG bar charts (PNG too when rsvg-convert or ImageMagick is
// installed).
//
// # Safety
//
// Only loopback addresses are accepted. Every server and client runs in
// its own process group; on return, error, SIGINT, SIGTERM or SIGHUP the
// harness kills them and removes its temp directory. Each transfer has a
// timeout. Missing tools are named before anything starts.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/offload/offload/test/bench/internal/xclient"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == xclientCommand {
		if err := xclient.Main(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	interrupted := ctx.Err() != nil // before stop, which cancels ctx too
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, err)
		if interrupted {
			fmt.Fprintln(os.Stderr, "bench: interrupted; servers stopped and temp files removed")
		}
		os.Exit(1)
	}
}

// options are the command-line flags.
type options struct {
	Settings
	out     string
	offload string
	pkcs11  bool
	keep    bool
	perf    string
	budget  time.Duration
	extra   listFlag // -offload-config lines
	servers map[string]bool
	kinds   map[string]bool
	cpus    cpuSplit
	args    []string
}

func parseOptions(args []string, stderr io.Writer) (*options, error) {
	o := &options{args: args}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.Rounds, "rounds", 3, "rounds; each figure is the median over them")
	size := fs.String("size", "1GiB", "payload size (KiB, MiB, GiB suffixes)")
	fs.StringVar(&o.out, "out", "test/bench/out", "directory for results.json, results.md and the plots")
	fs.StringVar(&o.Addr, "addr", "127.0.0.1", "loopback address the servers listen on")
	ciphers := fs.String("ciphers", strings.Join(defaultCiphers, ","), "pipe benchmark ciphers (\"default\": the client's own choice, servers on their default lists)")
	fs.StringVar(&o.XferCipher, "xfer-cipher", "aes128-gcm@openssh.com", "cipher of the sftp and scp benchmarks (\"default\" as for -ciphers)")
	clients := fs.String("clients", "1,2,4,8,16,32", "concurrent clients of the handshake benchmark")
	fs.IntVar(&o.Handshakes, "handshakes", 500, "handshakes per concurrency level and round (offload does about 1000 a second here; fewer mostly time the start)")
	fs.IntVar(&o.LatencyRuns, "latency-runs", 10, "`ssh host true` runs per round")
	fs.StringVar(&o.offload, "offload", "", "offload binary (default: go build ./cmd/offload into the temp dir)")
	fs.BoolVar(&o.pkcs11, "pkcs11", true, "also run offload with AES-GCM on a SoftHSM token")
	servers := fs.String("servers", "all", "comma list of servers: openssh, offload, offload-inproc, offload-software, offload-win8m, offload-pkcs11, offload-clientsel")
	only := fs.String("only", "all", "comma list of benchmarks: pipe, sftp, scp, latency, handshakes, and the shapes concurrent, smallfiles, rtt, idle (\"shapes\": all four; \"all\": all these), and, only when named, compress (ssh -C rows) and libclients (x/crypto and paramiko on their defaults)")
	fs.Var(&o.extra, "offload-config", "`line` added to every offload server's configuration, e.g. \"ChannelWindowSize 2097152\"; repeatable")
	fs.DurationVar(&o.budget, "budget", 0, "start no round that would end after this much measuring time (0: no limit)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temp directory (logs, configs) for debugging")
	fs.StringVar(&o.perf, "perf", "", "record every offload transfer with `perf record -g` into this directory (times include perf's cost)")
	serverCPUs := fs.String("server-cpus", "", "run the servers on these CPUs only (e.g. 0), and the harness with its clients on -client-cpus, so the load generator does not take the servers' CPU")
	clientCPUs := fs.String("client-cpus", "", "CPUs of the harness and its clients when -server-cpus is set (e.g. 1)")
	shapes := registerShapeFlags(o, fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("bench: unexpected argument %q", fs.Arg(0))
	}
	if err := shapes.finish(o); err != nil {
		return nil, err
	}
	var err error
	if o.cpus, err = parseCPUSplit(*serverCPUs, *clientCPUs); err != nil {
		return nil, err
	}
	o.CPUSplit = o.cpus.describe()
	return o, o.finish(*size, *ciphers, *clients, *servers, *only)
}

// finish validates the flags that need parsing.
func (o *options) finish(size, ciphers, clients, servers, only string) error {
	if _, err := checkLoopback(o.Addr); err != nil {
		return err
	}
	if o.Rounds < 1 || o.Rounds > 100 || o.Handshakes < 1 || o.LatencyRuns < 1 {
		return errors.New("bench: -rounds (1..100), -handshakes and -latency-runs must be positive")
	}
	var err error
	if o.Size, err = parseSize(size); err != nil {
		return err
	}
	if o.Clients, err = parseInts(clients, 256); err != nil {
		return err
	}
	o.Ciphers = strings.Split(ciphers, ",")
	if o.kinds, err = parseOnly(only); err != nil {
		return err
	}
	o.servers = map[string]bool{}
	for _, s := range strings.Split(servers, ",") {
		switch s = strings.TrimSpace(s); s {
		case "all":
			o.servers = nil
		case srvOpenSSH, srvOffload, srvInProc, srvSoftware, srvPKCS11, srvWindow, srvClientSel:
			if o.servers != nil {
				o.servers[s] = true
			}
		default:
			return fmt.Errorf("bench: -servers: unknown server %q", s)
		}
	}
	if o.servers != nil && !o.servers[srvPKCS11] {
		o.pkcs11 = false
	}
	o.Command = "go run ./test/bench " + strings.Join(o.args, " ")
	return nil
}

// wantServer reports whether -servers selects name.
// offload-clientsel, the A/B of CipherSelection, runs only when named.
func (o *options) wantServer(name string) bool {
	return o.servers[name] || o.servers == nil && name != srvClientSel
}

// wantOffload reports whether any offload server is selected.
func (o *options) wantOffload() bool {
	return o.wantServer(srvOffload) || o.wantServer(srvInProc) || o.wantServer(srvSoftware) || o.wantServer(srvPKCS11) || o.wantServer(srvWindow) || o.wantServer(srvClientSel)
}

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, "; ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }
