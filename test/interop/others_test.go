package interop_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// curl speaks SSH through libssh2, which has no algorithm options: the
// cells' servers choose for it.
func curlClient() *client {
	base := func(a *attempt) []string {
		return []string{"-sS", "--insecure", "--connect-timeout", strconv.Itoa(clientTimeout), "-u", a.e.user + ":",
			"--key", a.key(), "--pubkey", a.key() + ".pub"}
	}
	url := func(a *attempt, scheme, path string) string {
		return scheme + "://127.0.0.1:" + a.s.port + path
	}
	transfer := func(scheme string) func(ctx context.Context, a *attempt) error {
		return func(ctx context.Context, a *attempt) error {
			up, down := a.remotePath("curl-"+scheme), filepath.Join(a.local, "curl-"+scheme+"-down")
			if _, err := a.cmd(ctx, nil, "", "curl", append(base(a), "-T", a.e.payload, url(a, scheme, up))...); err != nil {
				return err
			}
			if _, err := a.cmd(ctx, nil, "", "curl", append(base(a), "-o", down, url(a, scheme, up))...); err != nil {
				return err
			}
			return a.checkRoundTrip(up, down)
		}
	}
	return &client{
		name:  "curl",
		tools: []tool{{"curl", "curl"}},
		version: func(*testing.T) string {
			for _, f := range strings.Fields(firstLine("curl", "-V")) {
				if strings.HasPrefix(f, "libssh2/") {
					return firstLine("curl", "-V")[:strings.Index(firstLine("curl", "-V"), " (")] + ", " + f
				}
			}
			return firstLine("curl", "-V")
		},
		// libssh2 says this when it finds nothing in common with the
		// server's KEXINIT and hangs up before the server does (the
		// server's log then shows only the connection lost in the
		// handshake). Never applied on the defaults row.
		noCommon: []string{"Unable to exchange encryption keys"},
		ops: []op{
			{name: "sftp://", data: true, run: transfer("sftp")},
			{name: "scp://", data: true, run: transfer("scp")},
		},
	}
}

// rclone's sftp backend is configured on its command line only: a
// connection string, and a configuration file that does not exist.
func rcloneClient() *client {
	return &client{
		name:    "rclone",
		tools:   []tool{{"rclone", "rclone"}},
		version: func(*testing.T) string { return firstLine("rclone", "version") },
		ops: []op{
			{name: "sftp", data: true, run: func(ctx context.Context, a *attempt) error {
				up, down := a.remotePath("rclone"), filepath.Join(a.local, "rclone-down")
				remote := fmt.Sprintf(":sftp,host=127.0.0.1,port=%s,user=%s,key_file=%s,shell_type=unix:%s",
					a.s.port, a.e.user, a.key(), up)
				env := []string{"RCLONE_CONFIG=" + filepath.Join(a.local, "no-rclone.conf"), "HOME=" + a.local,
					"XDG_CACHE_HOME=" + a.local, "XDG_CONFIG_HOME=" + a.local}
				flags := []string{"-q", "--retries", "1", "--low-level-retries", "1", "--contimeout", fmt.Sprintf("%ds", clientTimeout)}
				if _, err := a.cmd(ctx, env, "", "rclone", append(flags, "copyto", a.e.payload, remote)...); err != nil {
					return err
				}
				if _, err := a.cmd(ctx, env, "", "rclone", append(flags, "copyto", remote, down)...); err != nil {
					return err
				}
				return a.checkRoundTrip(up, down)
			}},
		},
	}
}

// x/crypto/ssh runs in process with its default algorithms.
func xcryptoClient() *client {
	return &client{
		name:    "x/crypto",
		version: func(t *testing.T) string { return "golang.org/x/crypto " + moduleVersion(t, "golang.org/x/crypto") },
		rekey:   true,
		ops: []op{
			{name: "exec", run: func(ctx context.Context, a *attempt) error {
				return xcryptoSession(ctx, a, func(c *ssh.Client) error {
					s, err := c.NewSession()
					if err != nil {
						return err
					}
					defer s.Close()
					out, err := s.Output(execCommand)
					if err == nil && string(out) != execWant {
						err = fmt.Errorf("printed %q, want %q", out, execWant)
					}
					return err
				})
			}},
			{name: "upload", data: true, run: func(ctx context.Context, a *attempt) error {
				dst := a.remotePath("xcrypto-upload")
				err := xcryptoSession(ctx, a, func(c *ssh.Client) error {
					s, err := c.NewSession()
					if err != nil {
						return err
					}
					defer s.Close()
					f, err := os.Open(a.e.payload)
					if err != nil {
						return err
					}
					defer f.Close()
					s.Stdin = f
					var errb bytes.Buffer
					s.Stderr = &errb
					if err := s.Run("cat > " + dst); err != nil {
						return fmt.Errorf("%v: %s", err, errb.String())
					}
					return nil
				})
				if err != nil {
					return err
				}
				return a.checkUpload(dst)
			}},
			{name: "sftp", data: true, run: func(ctx context.Context, a *attempt) error {
				up, down := a.remotePath("xcrypto-sftp"), filepath.Join(a.local, "xcrypto-sftp-down")
				err := xcryptoSession(ctx, a, func(c *ssh.Client) error {
					sc, err := sftp.NewClient(c)
					if err != nil {
						return err
					}
					defer sc.Close()
					if err := sftpCopy(a.e.payload, up, os.Open, func(p string) (io.WriteCloser, error) { return sc.Create(p) }); err != nil {
						return err
					}
					return sftpCopy(up, down, func(p string) (*sftp.File, error) { return sc.Open(p) }, func(p string) (io.WriteCloser, error) { return os.Create(p) })
				})
				if err != nil {
					return err
				}
				return a.checkRoundTrip(up, down)
			}},
			pqOp(func() string {
				for _, k := range ssh.SupportedAlgorithms().KeyExchanges {
					if strings.Contains(k, "mlkem") {
						return k
					}
				}
				return ""
			}),
		},
	}
}

func sftpCopy[R io.ReadCloser](src, dst string, open func(string) (R, error), create func(string) (io.WriteCloser, error)) error {
	r, err := open(src)
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func xcryptoSession(ctx context.Context, a *attempt, f func(*ssh.Client) error) error {
	b, err := os.ReadFile(a.key())
	if err != nil {
		return err
	}
	signer, err := ssh.ParsePrivateKey(b)
	if err != nil {
		return err
	}
	cfg := &ssh.ClientConfig{User: a.e.user, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey()}
	if a.c.clientRekey {
		cfg.RekeyThreshold = rekeyBytes
	}
	var d net.Dialer
	tcp, err := d.DialContext(ctx, "tcp", a.s.addr)
	if err != nil {
		return err
	}
	nc := countedConn{Conn: tcp, p: &a.prog}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	cc, chans, reqs, err := ssh.NewClientConn(nc, a.s.addr, cfg)
	if err != nil {
		nc.Close()
		return err
	}
	c := ssh.NewClient(cc, chans, reqs)
	defer c.Close()
	return f(c)
}

// moduleVersion is the version go.mod requires of a module (a test
// binary's build information lists no dependencies).
func moduleVersion(t *testing.T, path string) string {
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	return "?"
}
