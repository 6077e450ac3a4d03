package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/offload/offload/internal/proctree"
	"github.com/offload/offload/test/bench/internal/login"
	"golang.org/x/crypto/ssh"
)

// The transfer shapes beyond one client on loopback: N concurrent
// uploads, many small files over SFTP, a path with a round-trip time
// through a delay proxy, and many idle authenticated connections.
const (
	kindStreams  = "concurrent-upload"
	kindSmallPut = "sftp-small-put"
	kindSmallGet = "sftp-small-get"
	kindRTTUp    = "rtt-pipe-upload"
	kindRTTDown  = "rtt-pipe-download"
	kindIdle     = "idle-connections"
)

// shapeGroups are the -only words of the shapes ("shapes" is all four).
var shapeGroups = map[string][]string{
	"concurrent": {kindStreams},
	"smallfiles": {kindSmallPut, kindSmallGet},
	"rtt":        {kindRTTUp, kindRTTDown},
	"idle":       {kindIdle},
}

var shapeOrder = []string{"concurrent", "smallfiles", "rtt", "idle"}

func isShape(kind string) bool {
	for _, ks := range shapeGroups {
		if slices.Contains(ks, kind) {
			return true
		}
	}
	return false
}

// shapeTasks lists one round's shape tasks; they run on the servers that
// take sessions (OpenSSH's and offload's), as the latency tests do.
func shapeTasks(s Settings, specs []serverSpec, kinds map[string]bool) []task {
	var out []task
	add := func(kind string, clients, rtt int) {
		if !kinds[kind] {
			return
		}
		t := task{Kind: kind, Cipher: s.XferCipher, Clients: clients, RTTMillis: rtt}
		if kind == kindIdle {
			t.Cipher = ""
		}
		for _, sp := range specs {
			if sp.Sessions {
				t.Servers = append(t.Servers, sp.Name)
			}
		}
		if len(t.Servers) > 0 {
			out = append(out, t)
		}
	}
	for _, n := range s.Streams {
		add(kindStreams, n, 0)
	}
	add(kindSmallPut, 0, 0)
	add(kindSmallGet, 0, 0)
	for _, rtt := range s.RTTMillis {
		add(kindRTTUp, 0, rtt)
		add(kindRTTDown, 0, rtt)
	}
	for _, n := range s.Idle {
		add(kindIdle, n, 0)
	}
	return out
}

// shapeFlags registers the shapes' flags; finishShapes parses them.
type shapeFlags struct{ streams, rtts, rttSize, idle *string }

func registerShapeFlags(o *options, fs interface {
	String(name, value, usage string) *string
	IntVar(p *int, name string, value int, usage string)
}) *shapeFlags {
	f := &shapeFlags{
		streams: fs.String("streams", "1,4,16,64", "concurrent uploads of the concurrent benchmark (each moves size/N)"),
		rtts:    fs.String("rtt", "20ms,100ms", "round-trip times of the delay-proxy path"),
		rttSize: fs.String("rtt-size", "256MiB", "bytes moved per transfer through the delay proxy (at most -size)"),
		idle:    fs.String("idle", "1000,5000", "idle authenticated connections held open at once"),
	}
	fs.IntVar(&o.SmallFiles, "small-files", 10000, "files of the small-file SFTP benchmark")
	fs.IntVar(&o.SmallFileSize, "small-file-size", 4096, "bytes per file of the small-file SFTP benchmark")
	return f
}

func (f *shapeFlags) finish(o *options) error {
	var err error
	if o.Streams, err = parseInts(*f.streams, 256); err != nil {
		return err
	}
	if o.Idle, err = parseInts(*f.idle, 100000); err != nil {
		return err
	}
	for _, r := range strings.Split(*f.rtts, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(r))
		if err != nil || d < time.Millisecond || d > 10*time.Second {
			return fmt.Errorf("bench: -rtt: %q is not a duration between 1ms and 10s", r)
		}
		o.RTTMillis = append(o.RTTMillis, int(d/time.Millisecond))
	}
	if o.RTTSize, err = parseSize(*f.rttSize); err != nil {
		return err
	}
	if o.SmallFiles < 1 || o.SmallFiles > 1_000_000 || o.SmallFileSize < 1 || o.SmallFileSize > 64<<20 {
		return errors.New("bench: -small-files (1..1000000) and -small-file-size (1..64MiB) out of range")
	}
	return nil
}

// shapeState is what the shapes keep across tasks: proxies per server
// and RTT, and the tree of small files.
type shapeState struct {
	mu      sync.Mutex
	proxies map[[2]int]*delayProxy
	small   string // directory of the small files, made once
}

func (b *bench) shapeState() *shapeState {
	if b.shapes == nil {
		b.shapes = &shapeState{proxies: map[[2]int]*delayProxy{}}
	}
	return b.shapes
}

// closeShapes stops the proxies.
func (b *bench) closeShapes() {
	if b.shapes == nil {
		return
	}
	for _, p := range b.shapes.proxies {
		p.Close()
	}
}

// runShape takes one sample of a shape task.
func runShape(ctx context.Context, b *bench, sv *server, tk task, record func(Sample, error), prefix string, log io.Writer) {
	var s Sample
	var err error
	switch tk.Kind {
	case kindStreams:
		s, err = b.streams(ctx, sv, tk.Clients, tk.Cipher)
		if err == nil {
			fmt.Fprintf(log, "%s %.0f MB/s aggregate, per stream %.1f..%.1f MB/s, server CPU %.2fs\n", prefix,
				float64(s.Bytes)/s.Seconds/1e6, s.StreamMinMBps, s.StreamMaxMBps, s.CPUSeconds)
		}
	case kindSmallPut, kindSmallGet:
		s, err = b.smallFiles(ctx, sv, tk.Kind, tk.Cipher)
		if err == nil {
			fmt.Fprintf(log, "%s %d files in %.2fs, %.0f files/s, server CPU %.2fs\n", prefix, s.Count, s.Seconds,
				float64(s.Count)/s.Seconds, s.CPUSeconds)
		}
	case kindRTTUp, kindRTTDown:
		s, err = b.rttTransfer(ctx, sv, tk)
		if err == nil {
			fmt.Fprintf(log, "%s %.1f MB/s over %d ms RTT, server CPU %.2fs\n", prefix,
				float64(s.Bytes)/s.Seconds/1e6, tk.RTTMillis, s.CPUSeconds)
		}
	case kindIdle:
		s, err = b.idle(ctx, sv, tk.Clients)
		if err == nil {
			fmt.Fprintf(log, "%s %d open, %.1f KiB RSS each, accept p50 %.1f ms p99 %.1f ms\n", prefix,
				s.Count, s.RSSPerConnKiB, s.AcceptP50Ms, s.AcceptP99Ms)
		}
	default:
		err = fmt.Errorf("bench: unknown shape %q", tk.Kind)
	}
	record(s, err)
}

// streams runs n pipe uploads at once, each of size/n bytes, and reports
// the aggregate and the slowest and fastest stream's rate.
func (b *bench) streams(ctx context.Context, sv *server, n int, cipher string) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	per := max(b.size/int64(n), 1)
	f, err := os.Open(b.w.Payload)
	if err != nil {
		return Sample{}, fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	rates := make([]float64, n)
	var wall time.Duration
	cpu, session, err := measureCPU(sv, func() error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				src := io.NewSectionReader(f, int64(i)*per, per)
				d, err := countedUpload(ctx, b.c.sshArgs(sv.port, cipher, "wc -c"), src, per)
				rates[i], errs[i] = float64(per)/d.Wall.Seconds()/1e6, err
			}()
		}
		wg.Wait()
		wall = time.Since(start)
		return errors.Join(errs...)
	})
	if err != nil {
		return Sample{}, err
	}
	return Sample{Seconds: wall.Seconds(), CPUSeconds: cpu, SessionCPUSeconds: session, Bytes: per * int64(n),
		StreamMinMBps: slices.Min(rates), StreamMaxMBps: slices.Max(rates)}, nil
}

// countedUpload sends src to a remote `wc -c` and checks the count.
func countedUpload(ctx context.Context, argv []string, src io.Reader, want int64) (cmdTimes, error) {
	var out strings.Builder
	d, err := runCmd(ctx, argv, src, &out)
	if err != nil {
		return d, err
	}
	if got, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64); err != nil || got != want {
		return d, fmt.Errorf("bench: the server received %q bytes, want %d", strings.TrimSpace(out.String()), want)
	}
	return d, nil
}

// smallTree makes the directory of small files once.
func (b *bench) smallTree(n, size int) (string, error) {
	st := b.shapeState()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.small != "" {
		return st.small, nil
	}
	dir := filepath.Join(b.w.Dir, "small")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	buf := make([]byte, size)
	for i := range n {
		copy(buf, fmt.Sprintf("file %d of %d\n", i, n))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d", i)), buf, 0o644); err != nil {
			return "", fmt.Errorf("bench: %w", err)
		}
	}
	st.small = dir
	return dir, nil
}

// smallFiles puts the tree of small files with `sftp put -r`, or gets it
// with `get -r`, and checks every file arrived whole.
func (b *bench) smallFiles(ctx context.Context, sv *server, kind, cipher string) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout+10*time.Minute)
	defer cancel()
	n, size := b.settings.SmallFiles, b.settings.SmallFileSize
	src, err := b.smallTree(n, size)
	if err != nil {
		return Sample{}, err
	}
	dst := filepath.Join(b.w.Remote, "small-put")
	line := fmt.Sprintf("put -r %s %s\n", src, dst)
	if kind == kindSmallGet {
		dst = filepath.Join(b.w.Local, "small-get")
		line = fmt.Sprintf("get -r %s %s\n", src, dst)
	}
	os.RemoveAll(dst)
	defer os.RemoveAll(dst)
	batch := filepath.Join(b.w.Dir, kind+".batch")
	if err := os.WriteFile(batch, []byte(line), 0o600); err != nil {
		return Sample{}, fmt.Errorf("bench: %w", err)
	}
	var d cmdTimes
	cpu, _, err := measureCPU(sv, func() (err error) {
		d, err = runCmd(ctx, b.c.sftpArgs(sv.port, cipher, batch), nil, nil)
		return err
	})
	if err != nil {
		return Sample{}, err
	}
	if err := checkTree(dst, n, int64(size)); err != nil {
		return Sample{}, err
	}
	return Sample{Seconds: d.Wall.Seconds(), CPUSeconds: cpu, ClientCPUSeconds: d.CPU.Seconds(), Count: n}, nil
}

// checkTree fails unless dir holds n regular files of size bytes.
func checkTree(dir string, n int, size int64) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if len(ents) != n {
		return fmt.Errorf("bench: %s has %d entries, want %d", dir, len(ents), n)
	}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || info.Size() != size {
			return fmt.Errorf("bench: %s/%s is not a file of %d bytes", dir, e.Name(), size)
		}
	}
	return nil
}

// proxyFor returns the delay proxy in front of sv for rtt, started on
// first use.
func (b *bench) proxyFor(sv *server, rttMillis int) (*delayProxy, error) {
	st := b.shapeState()
	st.mu.Lock()
	defer st.mu.Unlock()
	k := [2]int{sv.port, rttMillis}
	if p, ok := st.proxies[k]; ok {
		return p, nil
	}
	target := net.JoinHostPort(b.c.addr, strconv.Itoa(sv.port))
	p, err := newDelayProxy(b.c.addr, target, time.Duration(rttMillis)*time.Millisecond, defaultProxyBuffer)
	if err != nil {
		return nil, err
	}
	st.proxies[k] = p
	return p, nil
}

// rttBytes is what one transfer through the proxy moves.
func (b *bench) rttBytes() int64 { return min(b.settings.RTTSize, b.size) }

// rttTransfer moves rttBytes through the delay proxy: up into `wc -c`,
// or down from `head -c`.
func (b *bench) rttTransfer(ctx context.Context, sv *server, tk task) (Sample, error) {
	p, err := b.proxyFor(sv, tk.RTTMillis)
	if err != nil {
		return Sample{}, err
	}
	n := b.rttBytes()
	// The proxy's port is not in known_hosts; the server's is.
	argv := func(command string) []string {
		a := b.c.sshArgs(p.Port(), tk.Cipher, command)
		return append([]string{a[0], "-o", fmt.Sprintf("HostKeyAlias=[%s]:%d", b.c.addr, sv.port)}, a[1:]...)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute+time.Duration(float64(n)/1e6*float64(time.Second)))
	defer cancel()
	var d cmdTimes
	cpu, session, err := measureCPU(sv, func() error {
		if tk.Kind == kindRTTUp {
			f, err := os.Open(b.w.Payload)
			if err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			defer f.Close()
			d, err = countedUpload(ctx, argv("wc -c"), io.LimitReader(f, n), n)
			return err
		}
		var c countWriter
		var err error
		d, err = runCmd(ctx, argv(fmt.Sprintf("head -c %d %s", n, b.w.Payload)), nil, &c)
		if err == nil && c.n != n {
			err = fmt.Errorf("bench: download through the proxy got %d bytes, want %d", c.n, n)
		}
		return err
	})
	if err != nil {
		return Sample{}, err
	}
	return Sample{Seconds: d.Wall.Seconds(), CPUSeconds: cpu, SessionCPUSeconds: session, ClientCPUSeconds: d.CPU.Seconds(), Bytes: n}, nil
}

// measureProxyCeilings measures the delay proxy alone at each RTT, before
// the rounds, so the report shows the proxy was not the limit.
func measureProxyCeilings(ctx context.Context, o *options, rep *Report, log io.Writer) error {
	if !o.kinds[kindRTTUp] && !o.kinds[kindRTTDown] {
		return nil
	}
	n := min(o.RTTSize, o.Size)
	for _, rtt := range append([]int{0}, o.RTTMillis...) {
		mbps, err := proxyCeiling(ctx, o.Addr, time.Duration(rtt)*time.Millisecond, n)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "bench: delay proxy alone at %d ms RTT: %.0f MB/s\n", rtt, mbps)
		rep.ProxyCeilings = append(rep.ProxyCeilings, ProxyCeiling{RTTMillis: rtt, Bytes: n, MBPerSec: mbps})
	}
	return nil
}

// ProxyCeiling is what the delay proxy carries alone (TCP in, TCP out).
type ProxyCeiling struct {
	RTTMillis int
	Bytes     int64
	MBPerSec  float64
}

// idle opens n authenticated connections (x/crypto/ssh, in process, 16
// handshakes at a time) and holds them open, then reads the resident
// memory of every process of the server: the growth divided by n is the
// cost of an idle connection. Each connection's accept latency is from
// dial to authenticated.
func (b *bench) idle(ctx context.Context, sv *server, n int) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := sv.settle(30 * time.Second); err != nil {
		return Sample{}, err
	}
	before, err := treeRSS("/proc", sv.meter.pid)
	if err != nil {
		return Sample{}, err
	}
	cfg := b.clientConfig()
	addr := net.JoinHostPort(b.c.addr, strconv.Itoa(sv.port))
	conns := make([]*ssh.Client, n)
	lat := make([]float64, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		sv.settle(time.Minute)
	}()
	start := time.Now()
	if err := forEach(ctx, n, 16, func(i int) error {
		t0 := time.Now()
		c, err := login.Dial(ctx, addr, cfg)
		lat[i], conns[i] = time.Since(t0).Seconds()*1000, c
		return err
	}); err != nil {
		return Sample{}, err
	}
	wall := time.Since(start)
	time.Sleep(time.Second) // let the server settle into its idle state
	after, err := treeRSS("/proc", sv.meter.pid)
	if err != nil {
		return Sample{}, err
	}
	slices.Sort(lat)
	return Sample{Seconds: wall.Seconds(), Count: n, RSSPerConnKiB: float64(after-before) / 1024 / float64(n),
		AcceptP50Ms: percentile(lat, 0.5), AcceptP99Ms: percentile(lat, 0.99)}, nil
}

// clientConfig is the in-process client's configuration (handshakes and
// idle connections).
func (b *bench) clientConfig() *ssh.ClientConfig {
	return login.Config(b.c.user, b.signer, ssh.FixedHostKey(b.hostKey))
}

// forEach runs f(0..n-1) with at most par at once and returns the first
// error (and starts no more after it).
func forEach(ctx context.Context, n, par int, f func(int) error) error {
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := range n {
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(i); err != nil {
				mu.Lock()
				first = cmpOr(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// percentile of sorted xs (nearest rank).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(p*float64(len(xs))+0.5) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// treeRSS sums the resident set of root and every descendant, in bytes
// (/proc/PID/statm's second field, in pages).
func treeRSS(procDir string, root int) (int64, error) {
	t, err := proctree.Read(procDir)
	if err != nil {
		return 0, err
	}
	if _, ok := t[root]; !ok {
		return 0, fmt.Errorf("bench: process %d is gone", root)
	}
	var sum int64
	for _, pid := range append([]int{root}, t.Descendants(root)...) {
		b, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "statm"))
		if err != nil {
			continue // exited meanwhile
		}
		pages, err := parseStatmRSS(string(b))
		if err != nil {
			return 0, err
		}
		sum += pages * int64(os.Getpagesize())
	}
	return sum, nil
}

// parseStatmRSS reads the resident pages from a /proc/PID/statm line.
func parseStatmRSS(line string) (int64, error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0, fmt.Errorf("bench: statm: %d fields, want at least 2", len(f))
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bench: statm: resident %q", f[1])
	}
	return n, nil
}

// summarizeShapes fills the shape medians.
func (c *Case) summarizeShapes() {
	var lo, hi, rss, p50, p99 []float64
	for _, s := range c.Samples {
		if s.StreamMaxMBps > 0 {
			lo, hi = append(lo, s.StreamMinMBps), append(hi, s.StreamMaxMBps)
		}
		if s.AcceptP50Ms > 0 {
			rss, p50, p99 = append(rss, s.RSSPerConnKiB), append(p50, s.AcceptP50Ms), append(p99, s.AcceptP99Ms)
		}
	}
	c.StreamMinMBps, c.StreamMaxMBps = nz(median(lo)), nz(median(hi))
	c.RSSPerConnKiB, c.AcceptP50Ms, c.AcceptP99Ms = nz(median(rss)), nz(median(p50)), nz(median(p99))
}
