// Package xclient is the benchmark's golang.org/x/crypto/ssh client: one
// transfer on the library's default algorithm choices, timed from the
// first byte to the last, with the cipher the connection negotiated.
//
// # Use
//
// test/bench runs its own binary as `bench xcrypto-client -op OP ...`
// (main dispatches to Main) so the client is a process of its own: on
// the client CPUs, with its CPU time read from wait4 like the OpenSSH
// clients'. It prints one JSON line (Result) and checks the payload's
// size on arrival; sftp-get and sftp-put go through github.com/pkg/sftp
// on its defaults, and the harness checks the file it left.
//
// # Algorithms
//
// Nothing but the host key callback, the user and the key is set: the
// cipher, MAC and key exchange are the library's own defaults, matched
// against what the server offers.
package xclient

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// Result is the client's one line of output.
type Result struct {
	Seconds  float64 // first byte to last
	Bytes    int64
	CipherCS string // client to server
	CipherSC string // server to client
}

// options are the command line of one transfer.
type options struct {
	addr, user, key, hostKey, op, src, dst string
	size                                   int64
}

func parse(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("xcrypto-client", flag.ContinueOnError)
	fs.StringVar(&o.addr, "addr", "", "host:port")
	fs.StringVar(&o.user, "user", "", "user name")
	fs.StringVar(&o.key, "key", "", "private key file")
	fs.StringVar(&o.hostKey, "hostkey", "", "the server's public key file (authorized_keys format)")
	fs.StringVar(&o.op, "op", "", "pipe-upload, pipe-download, sftp-get or sftp-put")
	fs.StringVar(&o.src, "src", "", "file to send (upload, put) or to fetch (download, get)")
	fs.StringVar(&o.dst, "dst", "", "where sftp-get and sftp-put write")
	fs.Int64Var(&o.size, "size", 0, "bytes of the payload")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("xclient: %w", err)
	}
	if o.addr == "" || o.key == "" || o.hostKey == "" || o.src == "" || o.size <= 0 {
		return nil, errors.New("xclient: -addr, -key, -hostkey, -src and -size are required")
	}
	return o, nil
}

// Main runs one transfer and writes its Result to stdout.
func Main(args []string, stdout io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	c, algs, err := dial(o)
	if err != nil {
		return err
	}
	defer c.Close()
	r, err := run(c, o)
	if err != nil {
		return err
	}
	r.CipherCS, r.CipherSC = algs.Write.Cipher, algs.Read.Cipher
	return json.NewEncoder(stdout).Encode(r)
}

// dial connects with the library's defaults and notes the negotiated
// algorithms, which x/crypto hands to the auth callback.
func dial(o *options) (*ssh.Client, *ssh.NegotiatedAlgorithms, error) {
	pem, err := os.ReadFile(o.key)
	if err != nil {
		return nil, nil, fmt.Errorf("xclient: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		return nil, nil, fmt.Errorf("xclient: key: %w", err)
	}
	pub, err := os.ReadFile(o.hostKey)
	if err != nil {
		return nil, nil, fmt.Errorf("xclient: %w", err)
	}
	hk, _, _, _, err := ssh.ParseAuthorizedKey(pub)
	if err != nil {
		return nil, nil, fmt.Errorf("xclient: host key: %w", err)
	}
	algs := &ssh.NegotiatedAlgorithms{}
	cfg := &ssh.ClientConfig{
		User:            o.user,
		HostKeyCallback: ssh.FixedHostKey(hk),
		Timeout:         30 * time.Second,
		AuthCallback: func(ctx *ssh.ClientAuthContext) (ssh.AuthMethod, error) {
			*algs = ctx.Algorithms
			return ssh.PublicKeys(signer), nil
		},
	}
	c, err := ssh.Dial("tcp", o.addr, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("xclient: %w", err)
	}
	return c, algs, nil
}

// run does the transfer op names.
func run(c *ssh.Client, o *options) (Result, error) {
	switch o.op {
	case "pipe-upload":
		return pipeUpload(c, o)
	case "pipe-download":
		return pipeDownload(c, o)
	case "sftp-get", "sftp-put":
		return sftpCopy(c, o)
	}
	return Result{}, fmt.Errorf("xclient: unknown -op %q", o.op)
}

// quietShell sends SHLVL=1, as the harness's OpenSSH clients do
// (SetEnv) and both servers accept: bash skips ~/.bashrc for it, whose
// cost (a pyenv init takes seconds) is no part of a transfer.
func quietShell(s *ssh.Session) error {
	if err := s.Setenv("SHLVL", "1"); err != nil {
		return fmt.Errorf("xclient: setenv SHLVL: %w", err)
	}
	return nil
}

// pipeUpload sends the file to a remote `wc -c` and checks its count.
func pipeUpload(c *ssh.Client, o *options) (Result, error) {
	f, err := os.Open(o.src)
	if err != nil {
		return Result{}, fmt.Errorf("xclient: %w", err)
	}
	defer f.Close()
	s, err := c.NewSession()
	if err != nil {
		return Result{}, fmt.Errorf("xclient: %w", err)
	}
	defer s.Close()
	if err := quietShell(s); err != nil {
		return Result{}, err
	}
	s.Stdin = f
	var out strings.Builder
	s.Stdout = &out
	start := time.Now()
	if err := s.Run("wc -c"); err != nil {
		return Result{}, fmt.Errorf("xclient: wc -c: %w", err)
	}
	d := time.Since(start)
	n, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
	if err != nil || n != o.size {
		return Result{}, fmt.Errorf("xclient: the server received %q bytes, want %d", strings.TrimSpace(out.String()), o.size)
	}
	return Result{Seconds: d.Seconds(), Bytes: n}, nil
}

// pipeDownload reads `cat SRC` to the end and checks its length.
func pipeDownload(c *ssh.Client, o *options) (Result, error) {
	s, err := c.NewSession()
	if err != nil {
		return Result{}, fmt.Errorf("xclient: %w", err)
	}
	defer s.Close()
	if err := quietShell(s); err != nil {
		return Result{}, err
	}
	out, err := s.StdoutPipe()
	if err != nil {
		return Result{}, fmt.Errorf("xclient: %w", err)
	}
	start := time.Now()
	if err := s.Start("cat " + o.src); err != nil {
		return Result{}, fmt.Errorf("xclient: %w", err)
	}
	n, err := io.Copy(io.Discard, out)
	d := time.Since(start)
	if err == nil {
		err = s.Wait()
	}
	if err != nil {
		return Result{}, fmt.Errorf("xclient: cat: %w", err)
	}
	if n != o.size {
		return Result{}, fmt.Errorf("xclient: pipe download got %d bytes, want %d", n, o.size)
	}
	return Result{Seconds: d.Seconds(), Bytes: n}, nil
}

// sftpCopy gets src into dst or puts src at dst with pkg/sftp's defaults.
func sftpCopy(c *ssh.Client, o *options) (Result, error) {
	sc, err := sftp.NewClient(c)
	if err != nil {
		return Result{}, fmt.Errorf("xclient: sftp: %w", err)
	}
	defer sc.Close()
	start := time.Now()
	var n int64
	if o.op == "sftp-get" {
		n, err = sftpGet(sc, o.src, o.dst)
	} else {
		n, err = sftpPut(sc, o.src, o.dst)
	}
	if err != nil {
		return Result{}, err
	}
	return Result{Seconds: time.Since(start).Seconds(), Bytes: n}, nil
}

func sftpGet(sc *sftp.Client, src, dst string) (int64, error) {
	r, err := sc.Open(src)
	if err != nil {
		return 0, fmt.Errorf("xclient: sftp open: %w", err)
	}
	defer r.Close()
	w, err := os.Create(dst)
	if err != nil {
		return 0, fmt.Errorf("xclient: %w", err)
	}
	n, err := r.WriteTo(w)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("xclient: sftp get: %w", err)
	}
	return n, nil
}

func sftpPut(sc *sftp.Client, src, dst string) (int64, error) {
	r, err := os.Open(src)
	if err != nil {
		return 0, fmt.Errorf("xclient: %w", err)
	}
	defer r.Close()
	w, err := sc.Create(dst)
	if err != nil {
		return 0, fmt.Errorf("xclient: sftp create: %w", err)
	}
	n, err := w.ReadFrom(r)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("xclient: sftp put: %w", err)
	}
	return n, nil
}
