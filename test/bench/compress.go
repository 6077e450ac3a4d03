package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The compression rows: pipe transfers with the OpenSSH client's
// Compression=yes (ssh -C) instead of the Compression=no every other
// command gets, of a compressible text corpus and of the random payload.
const (
	kindZUpText     = "pipe-upload -C text"
	kindZDownText   = "pipe-download -C text"
	kindZUpRandom   = "pipe-upload -C random"
	kindZDownRandom = "pipe-download -C random"
)

// compressKinds are the compression rows in table order.
var compressKinds = []string{kindZUpText, kindZDownText, kindZUpRandom, kindZDownRandom}

func isCompress(kind string) bool { return slices.Contains(compressKinds, kind) }

// compressShape says whether kind uploads and whether it moves the text.
func compressShape(kind string) (upload, text bool) {
	return strings.HasPrefix(kind, "pipe-upload"), strings.HasSuffix(kind, " text")
}

// withCompression turns an ssh command line of sshArgs into one with
// Compression=yes and -v, whose debug output names the negotiated
// compression and, at exit, how much it saved.
func withCompression(argv []string) ([]string, error) {
	i := slices.Index(argv, "Compression=no")
	if i < 0 || len(argv) == 0 {
		return nil, errors.New("bench: the ssh command has no Compression=no to turn on")
	}
	out := append([]string{argv[0], "-v"}, argv[1:]...)
	out[i+1] = "Compression=yes"
	return out, nil
}

// kexLine matches OpenSSH's debug line of a direction's algorithms.
var kexLine = regexp.MustCompile(`kex: (client->server|server->client) cipher: (\S+) MAC: \S+ compression: (\S+)`)

// compressionNegotiated fails unless ssh -v's output shows zlib
// (zlib@openssh.com or zlib) in both directions. Its errors have no
// prefix; the callers add theirs.
func compressionNegotiated(debug string) error {
	found := map[string]string{}
	for _, m := range kexLine.FindAllStringSubmatch(debug, -1) {
		found[m[1]] = m[3]
	}
	for _, dir := range []string{"client->server", "server->client"} {
		c, ok := found[dir]
		if !ok {
			return fmt.Errorf("ssh -v printed no %s algorithms", dir)
		}
		if !strings.HasPrefix(c, "zlib") {
			return fmt.Errorf("compression was not negotiated: %s compression %q", dir, c)
		}
	}
	return nil
}

// statLine matches OpenSSH's exit statistics of compression.
var statLine = regexp.MustCompile(`compress (outgoing|incoming): raw data (\d+), compressed (\d+)`)

// compressionFactor checks the negotiation and returns compressed/raw
// bytes of the payload's direction (outgoing for an upload).
func compressionFactor(debug string, upload bool) (float64, error) {
	if err := compressionNegotiated(debug); err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	dir := "incoming"
	if upload {
		dir = "outgoing"
	}
	for _, m := range statLine.FindAllStringSubmatch(debug, -1) {
		if m[1] != dir {
			continue
		}
		raw, err1 := strconv.ParseFloat(m[2], 64)
		comp, err2 := strconv.ParseFloat(m[3], 64)
		if err1 != nil || err2 != nil || raw <= 0 {
			break
		}
		return comp / raw, nil
	}
	return 0, fmt.Errorf("bench: compression negotiated but ssh -v reported no %s compression", dir)
}

// compressed moves a payload once with compression on and times it.
func (b *bench) compressed(ctx context.Context, sv *server, kind, cipher string) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	var d cmdTimes
	var factor float64
	cpu, session, err := measureCPU(sv, func() (err error) {
		d, factor, err = b.moveCompressed(ctx, sv.port, kind, cipher)
		return err
	})
	if err != nil {
		return Sample{}, err
	}
	return Sample{Seconds: d.Wall.Seconds(), CPUSeconds: cpu, SessionCPUSeconds: session, ClientCPUSeconds: d.CPU.Seconds(),
		Bytes: b.size, CompressFactor: factor}, nil
}

// moveCompressed uploads into a remote `wc -c` and checks its count, or
// downloads with `cat` and counts; then reads the factor from ssh -v.
func (b *bench) moveCompressed(ctx context.Context, port int, kind, cipher string) (cmdTimes, float64, error) {
	upload, text := compressShape(kind)
	path := b.w.Payload
	if text {
		path = b.w.TextPayload
	}
	command := "cat " + path
	if upload {
		command = "wc -c"
	}
	argv, err := withCompression(b.c.sshArgs(port, cipher, command))
	if err != nil {
		return cmdTimes{}, 0, err
	}
	var debug bytes.Buffer
	var d cmdTimes
	if upload {
		d, err = b.compressedUpload(ctx, argv, path, &debug)
	} else {
		var n countWriter
		d, err = runCmdCapture(ctx, argv, nil, &n, &debug)
		if err == nil && n.n != b.size {
			err = fmt.Errorf("bench: compressed download got %d bytes, want %d", n.n, b.size)
		}
	}
	if err != nil {
		return d, 0, err
	}
	f, err := compressionFactor(debug.String(), upload)
	return d, f, err
}

// compressedUpload sends path to `wc -c` and checks the count.
func (b *bench) compressedUpload(ctx context.Context, argv []string, path string, debug *bytes.Buffer) (cmdTimes, error) {
	f, err := os.Open(path)
	if err != nil {
		return cmdTimes{}, fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	var out strings.Builder
	d, err := runCmdCapture(ctx, argv, f, &out, debug)
	if err != nil {
		return d, err
	}
	if got := strings.TrimSpace(out.String()); got != strconv.FormatInt(b.size, 10) {
		return d, fmt.Errorf("bench: the server received %q bytes, want %d", got, b.size)
	}
	return d, nil
}

// checkCompression runs `ssh -C true` once against every server that has
// compression rows and fails the run, before anything is timed, unless
// both directions negotiated zlib.
func checkCompression(ctx context.Context, b *bench, servers []*server, cipher string) error {
	for _, sv := range servers {
		argv, err := withCompression(b.c.sshArgs(sv.port, cipher, "true"))
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		var debug bytes.Buffer
		_, err = runCmdCapture(cctx, argv, nil, nil, &debug)
		cancel()
		if err != nil {
			return err
		}
		if err := compressionNegotiated(debug.String()); err != nil {
			return fmt.Errorf("bench: %s with ssh -o Compression=yes: %w", sv.spec.Name, err)
		}
	}
	return nil
}

// writeTextPayload fills TextPayload with size bytes of the Go
// distribution's own source: every .go file under GOROOT/src in lexical
// path order, concatenated, repeated from the start until size. It
// returns what the corpus is, for the report.
func (w *workspace) writeTextPayload(ctx context.Context, size int64) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("bench: go env GOROOT: %w", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2 {
		return "", fmt.Errorf("bench: go env GOROOT GOVERSION printed %q", out)
	}
	files, total, err := goSources(filepath.Join(lines[0], "src"))
	if err != nil {
		return "", err
	}
	w.TextPayload = filepath.Join(w.Dir, "payload.txt")
	if err := writeRepeated(w.TextPayload, files, size); err != nil {
		return "", err
	}
	return fmt.Sprintf("the %d .go files under GOROOT/src of %s (%s) in lexical path order, concatenated (%.1f MB) and repeated to %s",
		len(files), lines[1], lines[0], float64(total)/1e6, formatSize(size)), nil
}

// goSources lists the .go files under dir in lexical order and their size.
func goSources(dir string) ([]string, int64, error) {
	var files []string
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files, total = append(files, p), total+info.Size()
		return nil
	})
	if err == nil && total == 0 {
		err = errors.New("no .go files")
	}
	if err != nil {
		return nil, 0, fmt.Errorf("bench: text corpus from %s: %w", dir, err)
	}
	return files, total, nil
}

// writeRepeated writes the files' contents, in order and over again,
// into dst until it holds size bytes.
func writeRepeated(dst string, files []string, size int64) error {
	f, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	left := size
	for left > 0 {
		for _, p := range files {
			if left == 0 {
				break
			}
			n, err := copyFile(f, p, left)
			if err != nil {
				f.Close()
				return err
			}
			left -= n
		}
	}
	return f.Close()
}

// copyFile appends at most limit bytes of src to w.
func copyFile(w io.Writer, src string, limit int64) (int64, error) {
	r, err := os.Open(src)
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	defer r.Close()
	n, err := io.Copy(w, io.LimitReader(r, limit))
	if err != nil {
		return n, fmt.Errorf("bench: text corpus: %w", err)
	}
	return n, nil
}
