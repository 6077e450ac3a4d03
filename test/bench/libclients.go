package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/offload/offload/test/bench/internal/xclient"
)

// The library-client rows: pipe upload and download and sftp get and put
// driven by golang.org/x/crypto/ssh (with github.com/pkg/sftp) and by
// paramiko, each on its default algorithms, no cipher forced. Each client
// is a process of its own (the x/crypto one is this binary run as
// `xcrypto-client`), times the transfer from its first byte to its last
// and prints the cipher it negotiated.
const (
	libXCrypto  = "xcrypto"
	libParamiko = "paramiko"
)

// libOps are what each library client does, in table order.
var libOps = []string{kindPipeUp, kindPipeDown, kindSFTPGet, kindSFTPPut}

// libKinds are the library-client rows: "xcrypto pipe-upload" and so on.
var libKinds = func() []string {
	var out []string
	for _, c := range []string{libXCrypto, libParamiko} {
		for _, op := range libOps {
			out = append(out, c+" "+op)
		}
	}
	return out
}()

func isLibClient(kind string) bool { return slices.Contains(libKinds, kind) }

// splitLibKind is "xcrypto pipe-upload" as ("xcrypto", "pipe-upload").
func splitLibKind(kind string) (client, op string) {
	client, op, _ = strings.Cut(kind, " ")
	return client, op
}

// xclientCommand is the first argument that makes this binary the
// x/crypto client instead of the harness.
const xclientCommand = "xcrypto-client"

//go:embed paramiko_client.py
var paramikoScript []byte

// pythonPaths are tried in order for a python3 that imports paramiko:
// the system one first (Debian's python3-paramiko), as a pyenv shim on
// PATH may lack it.
var pythonPaths = []string{"/usr/bin/python3", "python3"}

// libClients are the programs of the library-client rows.
type libClients struct {
	self     string // this binary, for xcrypto-client
	python   string
	paramiko string // the script, written into the workspace
}

// prepareLibClients finds the clients kinds need; paramiko rows need
// python3 with paramiko, named before anything is measured.
func prepareLibClients(ctx context.Context, kinds map[string]bool, w *workspace) (*libClients, error) {
	lc := &libClients{}
	var err error
	if lc.self, err = os.Executable(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if !kinds[libParamiko+" "+kindPipeUp] && !kinds[libParamiko+" "+kindSFTPGet] {
		return lc, nil
	}
	for _, p := range pythonPaths {
		if exec.CommandContext(ctx, p, "-c", "import paramiko").Run() == nil {
			lc.python = p
			break
		}
	}
	if lc.python == "" {
		return nil, fmt.Errorf("bench: the paramiko rows need python3 with paramiko (tried %s; on Debian: apt-get install python3-paramiko)",
			strings.Join(pythonPaths, ", "))
	}
	lc.paramiko = filepath.Join(w.Dir, "paramiko_client.py")
	if err := os.WriteFile(lc.paramiko, paramikoScript, 0o600); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return lc, nil
}

// argv is the command line of one library-client transfer.
func (lc *libClients) argv(b *bench, port int, kind, src, dst string) []string {
	client, op := splitLibKind(kind)
	size := strconv.FormatInt(b.size, 10)
	if client == libParamiko {
		return []string{lc.python, lc.paramiko, b.c.addr, strconv.Itoa(port), b.c.user, b.w.ClientKey,
			b.w.HostKey + ".pub", op, src, dst, size}
	}
	return []string{lc.self, xclientCommand, "-addr", fmt.Sprintf("%s:%d", b.c.host(), port), "-user", b.c.user,
		"-key", b.w.ClientKey, "-hostkey", b.w.HostKey + ".pub", "-op", op, "-src", src, "-dst", dst, "-size", size}
}

// libPaths are the source and destination of a library-client transfer.
func (b *bench) libPaths(op string) (src, dst string) {
	switch op {
	case kindSFTPGet:
		return b.w.Payload, filepath.Join(b.w.Local, "lib.bin")
	case kindSFTPPut:
		return b.w.Payload, filepath.Join(b.w.Remote, "lib.bin")
	}
	return b.w.Payload, ""
}

// libTransfer runs one library-client transfer: server CPU over the
// client's whole run, the client's CPU from wait4, the wall time the
// client measured from first byte to last.
func (b *bench) libTransfer(ctx context.Context, sv *server, kind string) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	_, op := splitLibKind(kind)
	src, dst := b.libPaths(op)
	if dst != "" {
		defer os.Remove(dst)
	}
	var d cmdTimes
	var out bytes.Buffer
	cpu, session, err := measureCPU(sv, func() (err error) {
		d, err = runCmd(ctx, b.lib.argv(b, sv.port, kind, src, dst), nil, &out)
		return err
	})
	if err != nil {
		return Sample{}, err
	}
	r, err := b.checkLibResult(out.Bytes(), dst)
	if err != nil {
		return Sample{}, err
	}
	return Sample{Seconds: r.Seconds, CPUSeconds: cpu, SessionCPUSeconds: session, ClientCPUSeconds: d.CPU.Seconds(),
		Bytes: b.size, Negotiated: negotiatedName(r.CipherCS, r.CipherSC)}, nil
}

// checkLibResult parses the client's line and checks the payload arrived
// whole: the count the client checked, or the file sftp left.
func (b *bench) checkLibResult(line []byte, dst string) (xclient.Result, error) {
	var r xclient.Result
	if err := json.Unmarshal(line, &r); err != nil {
		return r, fmt.Errorf("bench: library client printed %q: %w", truncate(string(line), 200), err)
	}
	if r.Seconds <= 0 || r.CipherCS == "" {
		return r, fmt.Errorf("bench: library client printed %q: no time or cipher", truncate(string(line), 200))
	}
	if dst != "" {
		return r, checkSize(dst, b.size)
	}
	if r.Bytes != b.size {
		return r, fmt.Errorf("bench: library client moved %d bytes, want %d", r.Bytes, b.size)
	}
	return r, nil
}

// negotiatedName is one cipher name, or both when the directions differ.
func negotiatedName(cs, sc string) string {
	if cs == sc {
		return cs
	}
	return cs + " / " + sc
}

// distinctNegotiated lists the samples' ciphers once each, in order.
func distinctNegotiated(samples []Sample) string {
	var out []string
	for _, s := range samples {
		if s.Negotiated != "" && !slices.Contains(out, s.Negotiated) {
			out = append(out, s.Negotiated)
		}
	}
	return strings.Join(out, ", ")
}

// summarizeRows fills the compression and library-client medians.
func (c *Case) summarizeRows() {
	var f []float64
	for _, s := range c.Samples {
		if s.CompressFactor > 0 {
			f = append(f, s.CompressFactor)
		}
	}
	c.CompressFactor = nz(median(f))
	c.Negotiated = distinctNegotiated(c.Samples)
}

// row takes one sample of a compression or library-client row.
func (b *bench) row(ctx context.Context, sv *server, tk task) (Sample, error) {
	if isCompress(tk.Kind) {
		return b.compressed(ctx, sv, tk.Kind, tk.Cipher)
	}
	return b.libTransfer(ctx, sv, tk.Kind)
}

// rowNote is the log's note of a row's sample: compression or cipher.
func rowNote(s Sample) string {
	if s.CompressFactor > 0 {
		return fmt.Sprintf(", compressed to %.3f", s.CompressFactor)
	}
	if s.Negotiated != "" {
		return ", cipher " + s.Negotiated
	}
	return ""
}

// prepareRows makes what the compression and library-client rows need
// before the rounds: the text payload and the check that every server
// negotiates compression, and the library clients.
func prepareRows(ctx context.Context, b *bench, servers []*server, o *options, rep *Report, log io.Writer) error {
	if slices.ContainsFunc(compressKinds, func(k string) bool { return o.kinds[k] }) {
		corpus, err := b.w.writeTextPayload(ctx, o.Size)
		if err != nil {
			return err
		}
		rep.TextCorpus = corpus
		fmt.Fprintf(log, "bench: text payload: %s\n", corpus)
		var zs []*server
		for _, sv := range servers {
			if sv.spec.Sessions && sv.spec.Pipe(o.XferCipher) {
				zs = append(zs, sv)
			}
		}
		if err := checkCompression(ctx, b, zs, o.XferCipher); err != nil {
			return err
		}
		fmt.Fprintln(log, "bench: zlib compression negotiated with every server")
	}
	if !slices.ContainsFunc(libKinds, func(k string) bool { return o.kinds[k] }) {
		return nil
	}
	var err error
	b.lib, err = prepareLibClients(ctx, o.kinds, b.w)
	return err
}
