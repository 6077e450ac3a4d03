package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/offload/offload/provider"
)

// speedSizes are openssl speed's block sizes plus 32 KiB, the SSH packet.
var speedSizes = []int{16, 64, 256, 1024, 8192, 16384, 32768}

type speedOptions struct {
	seconds  float64
	sizes    []int
	multi    int
	provider string
	json     bool
	plot     string // -plot: SVG file of the bulk results (plot.go)
	compare  string // -compare: "openssl" runs openssl speed too (speed_openssl.go)
	algs     map[string]bool
	reg      registryFlags
}

func (o *speedOptions) want(alg *provider.Algorithm, p provider.Provider) bool {
	if o.provider != "" && p.Name() != o.provider {
		return false
	}
	return len(o.algs) == 0 || o.algs[alg.Name]
}

func parseSpeed(args []string, stderr io.Writer) (*speedOptions, error) {
	o := &speedOptions{}
	fs := newFlagSet("speed", stderr)
	fs.Float64Var(&o.seconds, "seconds", 3, "seconds to run each test")
	bytes := fs.String("bytes", "", "run the bulk tests on this block size only (or a comma-separated list)")
	fs.IntVar(&o.multi, "multi", 1, "run N workers in parallel and sum their results")
	fs.StringVar(&o.provider, "provider", "", "test only this provider")
	fs.BoolVar(&o.json, "json", false, "print results as JSON")
	fs.StringVar(&o.plot, "plot", "", "also write the bulk results as an SVG chart to `file`")
	fs.StringVar(&o.compare, "compare", "", "also run `openssl` speed on the same algorithms and sizes and print the ratios")
	o.reg.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: offload speed [flags] [algorithm ...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.seconds <= 0 || o.multi < 1 {
		return nil, usagef("-seconds must be > 0 and -multi >= 1")
	}
	if o.compare != "" && o.compare != "openssl" {
		return nil, usagef("-compare: %q is not a tool offload can compare with (only openssl)", o.compare)
	}
	if o.compare != "" && o.multi > 1 {
		return nil, usagef("-compare openssl runs openssl with one worker: leave out -multi")
	}
	var err error
	if o.sizes, err = parseSizes(*bytes); err != nil {
		return nil, err
	}
	o.algs = map[string]bool{}
	for _, a := range fs.Args() {
		if _, err := provider.Lookup(a); err != nil {
			return nil, usagef("%v (known: %s)", err, strings.Join(provider.Names(), " "))
		}
		o.algs[a] = true
	}
	return o, nil
}

func parseSizes(s string) ([]int, error) {
	if s == "" {
		return speedSizes, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 16<<20 {
			return nil, usagef("-bytes: %q is not a block size between 1 and 16777216", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// bulkRow is one provider × algorithm line of the throughput table.
type bulkRow struct {
	Algorithm   string
	Provider    string
	Sizes       []int
	BytesPerSec []float64
}

// opRow is one line of the signature, key agreement or KEM table.
type opRow struct {
	Algorithm    string
	Provider     string
	Op           string // "sign", "derive", "encapsulate"
	PerSec       float64
	VerifyPerSec float64 `json:",omitempty"`
}

type speedReport struct {
	Build buildInfo
	Multi int
	Bulk  []bulkRow
	Ops   []opRow
	// Compare is openssl's side, with -compare openssl.
	Compare *compareReport `json:",omitempty"`
}

func cmdSpeed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseSpeed(args, stderr)
	if err != nil {
		return err
	}
	f, err := o.reg.features()
	if err != nil {
		return usagef("%v", err)
	}
	reg, err := o.reg.open(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	defer reg.Close()
	if o.provider != "" {
		if _, err := reg.Provider(o.provider); err != nil {
			return usagef("%v", err)
		}
	}
	var openssl runner
	if o.compare != "" {
		if openssl, err = findOpenSSL(); err != nil {
			return err
		}
	}
	rep := speedReport{Build: currentBuild(f), Multi: o.multi}
	if err := runSpeed(ctx, o, reg, &rep, stderr); err != nil {
		return err
	}
	if openssl != nil {
		if rep.Compare, err = compareOpenSSL(ctx, openssl, o, &rep, stderr); err != nil {
			return err
		}
	}
	if o.plot != "" {
		if err := writeSpeedPlot(o.plot, &rep); err != nil {
			return err
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printSpeed(stdout, &rep)
	return nil
}

func runSpeed(ctx context.Context, o *speedOptions, reg *provider.Registry, rep *speedReport, stderr io.Writer) error {
	d := time.Duration(o.seconds * float64(time.Second))
	for _, alg := range provider.Algorithms() {
		for _, p := range reg.Providers() {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !o.want(alg, p) || !provider.Supports(p, alg.Name, 0) {
				continue
			}
			var err error
			if alg.Bulk {
				err = speedBulk(ctx, o, alg, p, d, rep, stderr)
			} else {
				err = speedOps(ctx, o, alg, p, d, rep, stderr)
			}
			if err != nil {
				fmt.Fprintf(stderr, "%s (%s): %v\n", alg.Name, p.Name(), err)
			}
		}
	}
	return nil
}

func speedBulk(ctx context.Context, o *speedOptions, alg *provider.Algorithm, p provider.Provider,
	d time.Duration, rep *speedReport, stderr io.Writer) error {
	row := bulkRow{Algorithm: alg.Name, Provider: p.Name(), Sizes: o.sizes}
	for _, size := range o.sizes {
		fmt.Fprintf(stderr, "Doing %s (%s) for %gs on %d size blocks: ", alg.Name, p.Name(), d.Seconds(), size)
		n, elapsed, err := parallel(ctx, o.multi, d, func() (func() error, error) {
			op, err := provider.BulkOp(alg, p)
			if err != nil {
				return nil, err
			}
			buf := make([]byte, size)
			return func() error { return op(buf) }, nil
		})
		if err != nil {
			fmt.Fprintln(stderr, "failed")
			return err
		}
		fmt.Fprintf(stderr, "%d %s's in %.2fs\n", n, alg.Name, elapsed.Seconds())
		row.BytesPerSec = append(row.BytesPerSec, float64(n)*float64(size)/elapsed.Seconds())
	}
	rep.Bulk = append(rep.Bulk, row)
	return nil
}

func speedOps(ctx context.Context, o *speedOptions, alg *provider.Algorithm, p provider.Provider,
	d time.Duration, rep *speedReport, stderr io.Writer) error {
	row := opRow{Algorithm: alg.Name, Provider: p.Name(), Op: opName(alg)}
	fmt.Fprintf(stderr, "Doing %s (%s) %s for %gs: ", alg.Name, p.Name(), row.Op, d.Seconds())
	n, elapsed, err := parallel(ctx, o.multi, d, func() (func() error, error) { return provider.SingleOp(alg, p) })
	if err != nil {
		fmt.Fprintln(stderr, "failed")
		return err
	}
	fmt.Fprintf(stderr, "%d %s's in %.2fs\n", n, alg.Name, elapsed.Seconds())
	row.PerSec = float64(n) / elapsed.Seconds()
	if alg.Family == provider.FamilySignature {
		fmt.Fprintf(stderr, "Doing %s (%s) verify for %gs: ", alg.Name, p.Name(), d.Seconds())
		n, elapsed, err = parallel(ctx, o.multi, d, func() (func() error, error) { return verifyOp(alg, p) })
		if err != nil {
			fmt.Fprintln(stderr, "failed")
			return err
		}
		fmt.Fprintf(stderr, "%d %s verifies in %.2fs\n", n, alg.Name, elapsed.Seconds())
		row.VerifyPerSec = float64(n) / elapsed.Seconds()
	}
	rep.Ops = append(rep.Ops, row)
	return nil
}

func opName(alg *provider.Algorithm) string {
	switch alg.Family {
	case provider.FamilySignature:
		return "sign"
	case provider.FamilyKEM:
		return "encapsulate"
	}
	return "derive"
}

// verifyOp signs once with a fresh key of p and times the standard
// library's verification of that signature, as openssl speed does.
func verifyOp(alg *provider.Algorithm, p provider.Provider) (func() error, error) {
	kg, ok := p.(provider.KeyGenerator)
	if !ok {
		return nil, &provider.UnsupportedError{Provider: p.Name(), Algorithm: alg.Name}
	}
	s, err := kg.GenerateSigner(context.Background(), alg, "")
	if err != nil {
		return nil, err
	}
	msg, opts := provider.SignInput(alg, []byte("offload speed"))
	sig, err := s.Sign(rand.Reader, msg, opts)
	if err != nil {
		return nil, err
	}
	return func() error { return provider.Verify(s.Public(), alg, msg, sig, opts) }, nil
}

// parallel runs workers copies of the operation made by mk for about d and
// returns the summed count and the elapsed time, like openssl speed -multi.
func parallel(ctx context.Context, workers int, d time.Duration, mk func() (func() error, error)) (int, time.Duration, error) {
	ops := make([]func() error, workers)
	for i := range ops {
		op, err := mk()
		if err != nil {
			return 0, 0, err
		}
		ops[i] = op
	}
	var wg sync.WaitGroup
	counts := make([]int, workers)
	errs := make([]error, workers)
	start := time.Now()
	deadline := start.Add(d)
	for i := range ops {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			counts[i], errs[i] = timeLoop(ctx, ops[i], deadline)
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	total := 0
	for i := range counts {
		if errs[i] != nil {
			return 0, 0, errs[i]
		}
		total += counts[i]
	}
	return total, elapsed, nil
}

func timeLoop(ctx context.Context, op func() error, deadline time.Time) (int, error) {
	n := 0
	for batch := 1; ; {
		for i := 0; i < batch; i++ {
			if err := op(); err != nil {
				return n, err
			}
		}
		n += batch
		if time.Now().After(deadline) || ctx.Err() != nil {
			return n, ctx.Err()
		}
		if batch < 64 {
			batch *= 2
		}
	}
}

func printSpeed(w io.Writer, rep *speedReport) {
	for _, l := range rep.Build.lines() {
		fmt.Fprintln(w, l)
	}
	if rep.Multi > 1 {
		fmt.Fprintf(w, "workers: %d (results summed)\n", rep.Multi)
	}
	if len(rep.Bulk) > 0 {
		printBulk(w, rep.Bulk)
	}
	if len(rep.Ops) > 0 {
		printOps(w, rep.Ops)
	}
	if rep.Compare != nil {
		printCompare(w, rep, rep.Compare)
	}
}

func printBulk(w io.Writer, rows []bulkRow) {
	fmt.Fprintln(w, "The 'numbers' are in 1000s of bytes per second processed.")
	fmt.Fprintf(w, "%-32s", "type")
	for _, s := range rows[0].Sizes {
		fmt.Fprintf(w, " %12s", fmt.Sprintf("%d bytes", s))
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprintf(w, "%-32s", r.Algorithm+" ("+r.Provider+")")
		for _, b := range r.BytesPerSec {
			fmt.Fprintf(w, " %11.2fk", b/1000)
		}
		fmt.Fprintln(w)
	}
}

func printOps(w io.Writer, rows []opRow) {
	fmt.Fprintf(w, "%-32s %12s %12s %10s %10s\n", "", "op", "time/op", "op/s", "verify/s")
	for _, r := range rows {
		verify := "-"
		if r.VerifyPerSec > 0 {
			verify = fmt.Sprintf("%.1f", r.VerifyPerSec)
		}
		fmt.Fprintf(w, "%-32s %12s %11.6fs %10.1f %10s\n", r.Algorithm+" ("+r.Provider+")", r.Op,
			1/r.PerSec, r.PerSec, verify)
	}
}
