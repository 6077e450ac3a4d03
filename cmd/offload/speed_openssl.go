package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// `offload speed -compare openssl` runs `openssl speed` on the same
// algorithms and block sizes and prints its table and the ratio
// offload/openssl per cell. openssl runs with -mr (machine-readable
// lines, parsed below) and -elapsed (wall-clock time, as offload
// measures; without it openssl divides by its CPU time).

// opensslBulk maps catalog algorithms to openssl speed's arguments.
var opensslBulk = map[string][]string{
	"aes128-gcm":        {"-evp", "aes-128-gcm"},
	"aes256-gcm":        {"-evp", "aes-256-gcm"},
	"chacha20-poly1305": {"-evp", "chacha20-poly1305"},
	"aes128-ctr":        {"-evp", "aes-128-ctr"},
	"aes256-ctr":        {"-evp", "aes-256-ctr"},
	"chacha20":          {"-evp", "chacha20"},
	"hmac-sha256":       {"-hmac", "sha256"},
	"hmac-sha512":       {"-hmac", "sha512"},
	"sha256":            {"-evp", "sha256"},
	"sha384":            {"-evp", "sha384"},
	"sha512":            {"-evp", "sha512"},
}

// opensslOp is openssl speed's name for a public-key algorithm, and the
// result line (kind and bits) it prints for it.
type opensslOp struct {
	name string
	kind opKind
	bits int
}

var opensslOps = map[string]opensslOp{
	"ed25519":             {"ed25519", opEdDSA, 253},
	"ecdsa-p256-sha256":   {"ecdsap256", opECDSA, 256},
	"ecdsa-p384-sha384":   {"ecdsap384", opECDSA, 384},
	"rsa-pkcs1v15-sha256": {"rsa2048", opRSA, 2048},
	"rsa-pkcs1v15-sha512": {"rsa2048", opRSA, 2048},
	"x25519":              {"ecdhx25519", opECDH, 253},
	"ecdh-p256":           {"ecdhp256", opECDH, 256},
	"ecdh-p384":           {"ecdhp384", opECDH, 384},
}

// compareReport is openssl's side and the ratios, for the JSON output.
type compareReport struct {
	OpenSSL string // `openssl version`
	Bulk    []bulkRow
	Ops     []opRow
	// BulkRatio[i][j] is offload's Bulk[i] over openssl's figure for the
	// same algorithm and size (0: openssl has none); OpsRatio likewise
	// per op row, for sign (or derive) and verify.
	BulkRatio [][]float64
	OpsRatio  [][2]float64
}

// runner runs openssl with arguments and returns its standard output.
type runner func(ctx context.Context, args ...string) ([]byte, error)

func execOpenSSL(path string) runner {
	return func(ctx context.Context, args ...string) ([]byte, error) {
		var out, errb bytes.Buffer
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("openssl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
		}
		return out.Bytes(), nil
	}
}

// errNoOpenSSL is returned when -compare openssl finds no openssl.
var errNoOpenSSL = errors.New("-compare openssl: openssl is not installed or not on PATH (apt-get install openssl)")

// findOpenSSL returns a runner for the openssl on PATH.
func findOpenSSL() (runner, error) {
	p, err := exec.LookPath("openssl")
	if err != nil {
		return nil, errNoOpenSSL
	}
	return execOpenSSL(p), nil
}

// compareOpenSSL measures with openssl what rep measured with offload.
func compareOpenSSL(ctx context.Context, run runner, o *speedOptions, rep *speedReport, stderr io.Writer) (*compareReport, error) {
	v, err := run(ctx, "version")
	if err != nil {
		return nil, err
	}
	c := &compareReport{OpenSSL: strings.TrimSpace(string(v))}
	secs := strconv.Itoa(max(1, int(math.Round(o.seconds))))
	base := []string{"speed", "-mr", "-elapsed", "-seconds", secs}
	done := map[string]int{}
	for _, r := range rep.Bulk {
		if _, ok := done[r.Algorithm]; ok {
			continue
		}
		args, ok := opensslBulk[r.Algorithm]
		if !ok {
			continue
		}
		row := bulkRow{Algorithm: r.Algorithm, Provider: "openssl", Sizes: r.Sizes}
		for _, size := range r.Sizes {
			fmt.Fprintf(stderr, "Doing openssl speed %s -bytes %d\n", strings.Join(args, " "), size)
			out, err := run(ctx, append(append(base, "-bytes", strconv.Itoa(size)), args...)...)
			if err != nil {
				return nil, err
			}
			res, err := parseOpenSSLSpeed(out)
			if err != nil {
				return nil, fmt.Errorf("openssl %s: %w", args[1], err)
			}
			row.BytesPerSec = append(row.BytesPerSec, res.bulkAt(size))
		}
		done[r.Algorithm] = len(c.Bulk)
		c.Bulk = append(c.Bulk, row)
	}
	if err := compareOps(ctx, run, base, rep, c, stderr); err != nil {
		return nil, err
	}
	c.ratios(rep, done)
	return c, nil
}

// compareOps runs openssl once for every public-key algorithm in rep.
func compareOps(ctx context.Context, run runner, base []string, rep *speedReport, c *compareReport, stderr io.Writer) error {
	var names []string
	for _, r := range rep.Ops {
		if op, ok := opensslOps[r.Algorithm]; ok && !contains(names, op.name) {
			names = append(names, op.name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	fmt.Fprintf(stderr, "Doing openssl speed %s\n", strings.Join(names, " "))
	out, err := run(ctx, append(base, names...)...)
	if err != nil {
		return err
	}
	res, err := parseOpenSSLSpeed(out)
	if err != nil {
		return fmt.Errorf("openssl speed %s: %w", strings.Join(names, " "), err)
	}
	for _, r := range rep.Ops {
		op, ok := opensslOps[r.Algorithm]
		if !ok {
			continue
		}
		if f, ok := res.ops[opKey{op.kind, op.bits}]; ok {
			row := opRow{Algorithm: r.Algorithm, Provider: "openssl", Op: r.Op, PerSec: f[0]}
			if op.kind != opECDH {
				row.VerifyPerSec = f[1]
			}
			c.Ops = append(c.Ops, row)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ratios fills the ratio tables: offload's figure over openssl's.
func (c *compareReport) ratios(rep *speedReport, bulkIndex map[string]int) {
	for _, r := range rep.Bulk {
		row := make([]float64, len(r.BytesPerSec))
		if i, ok := bulkIndex[r.Algorithm]; ok {
			for j := range row {
				row[j] = ratio(r.BytesPerSec[j], c.Bulk[i].BytesPerSec[j])
			}
		}
		c.BulkRatio = append(c.BulkRatio, row)
	}
	for _, r := range rep.Ops {
		var pair [2]float64
		for _, o := range c.Ops {
			if o.Algorithm == r.Algorithm {
				pair = [2]float64{ratio(r.PerSec, o.PerSec), ratio(r.VerifyPerSec, o.VerifyPerSec)}
			}
		}
		c.OpsRatio = append(c.OpsRatio, pair)
	}
}

func ratio(a, b float64) float64 {
	if b <= 0 || a <= 0 {
		return 0
	}
	return a / b
}

// printCompare prints openssl's tables and the ratios, in the layout of
// offload's own tables.
func printCompare(w io.Writer, rep *speedReport, c *compareReport) {
	fmt.Fprintf(w, "\nopenssl: %s (openssl speed -mr -elapsed)\n", c.OpenSSL)
	if len(c.Bulk) > 0 {
		printBulk(w, c.Bulk)
	}
	if len(c.Ops) > 0 {
		printOps(w, c.Ops)
	}
	fmt.Fprintln(w, "\nratio offload/openssl (above 1: offload is faster)")
	if len(rep.Bulk) > 0 {
		fmt.Fprintf(w, "%-32s", "type")
		for _, s := range rep.Bulk[0].Sizes {
			fmt.Fprintf(w, " %12s", fmt.Sprintf("%d bytes", s))
		}
		fmt.Fprintln(w)
		for i, r := range rep.Bulk {
			fmt.Fprintf(w, "%-32s", r.Algorithm+" ("+r.Provider+")")
			for _, x := range c.BulkRatio[i] {
				fmt.Fprintf(w, " %12s", ratioString(x))
			}
			fmt.Fprintln(w)
		}
	}
	if len(rep.Ops) > 0 {
		fmt.Fprintf(w, "%-32s %12s %10s %10s\n", "", "op", "op/s", "verify/s")
		for i, r := range rep.Ops {
			fmt.Fprintf(w, "%-32s %12s %10s %10s\n", r.Algorithm+" ("+r.Provider+")", r.Op,
				ratioString(c.OpsRatio[i][0]), ratioString(c.OpsRatio[i][1]))
		}
	}
}

func ratioString(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

// The parser of `openssl speed -mr` output.

type opKind int

const (
	opRSA   opKind = 2 // +F2:index:bits:sign/s:verify/s
	opECDSA opKind = 4 // +F4:index:bits:sign/s:verify/s
	opECDH  opKind = 5 // +F5:index:bits:op/s:seconds/op
	opEdDSA opKind = 6 // +F6:index:bits:name:sign/s:verify/s
)

type opKey struct {
	kind opKind
	bits int
}

// opensslSpeed is what one `openssl speed -mr` run printed.
type opensslSpeed struct {
	sizes []int                // +H: the block sizes of the +F lines
	bulk  map[string][]float64 // +F: name -> bytes/s per size
	ops   map[opKey][2]float64 // +F2.. lines: op/s (sign or derive), verify/s
}

// bulkAt is the bytes per second at size from the only bulk result.
func (s *opensslSpeed) bulkAt(size int) float64 {
	for _, v := range s.bulk {
		for i, sz := range s.sizes {
			if sz == size && i < len(v) {
				return v[i]
			}
		}
	}
	return 0
}

// Limits of the parser: openssl prints a few dozen lines.
const (
	maxSpeedOutput = 1 << 20
	maxSpeedLine   = 4096
)

// parseOpenSSLSpeed reads `openssl speed -mr` output. It ignores lines it
// does not know (progress, +DT, +R, other result kinds) and rejects
// malformed result lines with an error naming the line.
func parseOpenSSLSpeed(out []byte) (*opensslSpeed, error) {
	if len(out) > maxSpeedOutput {
		return nil, fmt.Errorf("openssl speed output: %d bytes, more than %d", len(out), maxSpeedOutput)
	}
	s := &opensslSpeed{bulk: map[string][]float64{}, ops: map[opKey][2]float64{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1024), maxSpeedLine)
	for n := 1; sc.Scan(); n++ {
		if err := s.line(sc.Text()); err != nil {
			return nil, fmt.Errorf("openssl speed output line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("openssl speed output: %w", err)
	}
	if len(s.bulk) == 0 && len(s.ops) == 0 {
		return nil, errors.New("openssl speed output: no result lines (+F)")
	}
	return s, nil
}

func (s *opensslSpeed) line(l string) error {
	f := strings.Split(strings.TrimRight(l, "\r"), ":")
	switch f[0] {
	case "+H":
		return s.header(f[1:])
	case "+F":
		return s.bulkLine(f)
	case "+F2", "+F4", "+F5", "+F6":
		return s.opLine(f)
	}
	return nil
}

func (s *opensslSpeed) header(f []string) error {
	var sizes []int
	for _, x := range f {
		n, err := strconv.Atoi(x)
		if err != nil || n <= 0 {
			return fmt.Errorf("+H: block size %q", x)
		}
		sizes = append(sizes, n)
	}
	// The +F figures are by position in the +H sizes: other sizes after
	// them would give their figures sizes they were not measured at.
	if len(s.bulk) > 0 && !slices.Equal(sizes, s.sizes) {
		return fmt.Errorf("+H: block sizes %v after figures for %v", sizes, s.sizes)
	}
	s.sizes = sizes
	return nil
}

// +F:index:name:bytes/s for each +H size.
func (s *opensslSpeed) bulkLine(f []string) error {
	if len(f) < 4 || f[2] == "" {
		return fmt.Errorf("+F: %d fields", len(f))
	}
	if len(f)-3 != len(s.sizes) {
		return fmt.Errorf("+F %s: %d figures for %d block sizes", f[2], len(f)-3, len(s.sizes))
	}
	v := make([]float64, 0, len(f)-3)
	for _, x := range f[3:] {
		r, err := rate(x)
		if err != nil {
			return fmt.Errorf("+F %s: %w", f[2], err)
		}
		v = append(v, r)
	}
	s.bulk[f[2]] = v
	return nil
}

func (s *opensslSpeed) opLine(f []string) error {
	kind := opKind(f[0][2] - '0')
	want := 5
	if kind == opEdDSA {
		want = 6
	}
	if len(f) != want {
		return fmt.Errorf("%s: %d fields, want %d", f[0], len(f), want)
	}
	bits, err := strconv.Atoi(f[2])
	if err != nil || bits <= 0 || bits > 65536 {
		return fmt.Errorf("%s: key size %q", f[0], f[2])
	}
	a, b := f[3], f[4]
	if kind == opEdDSA {
		a, b = f[4], f[5]
	}
	op, err := rate(a)
	if err != nil {
		return fmt.Errorf("%s: %w", f[0], err)
	}
	second, err := rate(b)
	if err != nil {
		return fmt.Errorf("%s: %w", f[0], err)
	}
	if kind == opECDH {
		second = 0 // seconds per op, not a rate
	}
	s.ops[opKey{kind, bits}] = [2]float64{op, second}
	return nil
}

// rate parses a non-negative, finite figure.
func rate(x string) (float64, error) {
	v, err := strconv.ParseFloat(x, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("figure %q", x)
	}
	return v, nil
}
