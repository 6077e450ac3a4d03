package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offload/offload/test/bench/internal/login"
	"golang.org/x/crypto/ssh"
)

// bench runs single measurements against the servers.
type bench struct {
	c       *client
	w       *workspace
	size    int64
	timeout time.Duration // per transfer
	signer  ssh.Signer    // client key, for in-process handshakes
	hostKey ssh.PublicKey
	perf    *perfRecorder // nil unless -perf
	// settings and shapes serve the transfer shapes (shapes.go).
	settings Settings
	shapes   *shapeState
	lib      *libClients // the library-client rows' programs (libclients.go)
}

// transferTimeout bounds one transfer: a minute plus the payload at
// 4 MB/s, far below any server's speed, so only a hang trips it.
func transferTimeout(size int64) time.Duration {
	return time.Minute + time.Duration(float64(size)/4e6*float64(time.Second))
}

// measureCPU runs f and returns the server's CPU seconds spent meanwhile:
// those of its whole process tree, live descendants included, and of
// that the session programs' (sessionMeter). OpenSSH's
// per-connection processes are waited for, so that their time has been
// reaped into the server's counters; a separated offload keeps its
// processes (workers, a user's lingering post-auth process), whose time is
// read where they live.
func measureCPU(sv *server, f func() error) (total, session float64, err error) {
	if sv.spec.OpenSSH {
		if err := sv.settle(5 * time.Second); err != nil {
			return 0, 0, err
		}
	}
	before, err := sv.meter.Seconds()
	if err != nil {
		return 0, 0, err
	}
	sm := startSessionMeter(sv.meter)
	err = f()
	session = sm.Seconds()
	if err != nil {
		return 0, 0, err
	}
	if sv.spec.OpenSSH {
		if err := sv.settle(10 * time.Second); err != nil {
			return 0, 0, err
		}
	}
	after, err := sv.meter.Seconds()
	return after - before, session, err
}

// transfer moves the payload once in the way kind says and times it.
func (b *bench) transfer(ctx context.Context, sv *server, kind, cipher string) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	var d cmdTimes
	cpu, session, err := measureCPU(sv, func() (err error) {
		stop := b.perf.start(sv, kind, cipher)
		d, err = b.move(ctx, sv.port, kind, cipher)
		if perr := stop(); err == nil {
			err = perr
		}
		return err
	})
	if err != nil {
		return Sample{}, err
	}
	return Sample{Seconds: d.Wall.Seconds(), CPUSeconds: cpu, SessionCPUSeconds: session, ClientCPUSeconds: d.CPU.Seconds(), Bytes: b.size}, nil
}

// move runs the client command of one transfer and checks what arrived.
func (b *bench) move(ctx context.Context, port int, kind, cipher string) (cmdTimes, error) {
	c, w := b.c, b.w
	switch kind {
	case kindPipeUp:
		f, err := os.Open(w.Payload)
		if err != nil {
			return cmdTimes{}, fmt.Errorf("bench: %w", err)
		}
		defer f.Close()
		return runCmd(ctx, c.sshArgs(port, cipher, "cat > /dev/null"), f, nil)
	case kindPipeDown:
		var n countWriter
		d, err := runCmd(ctx, c.sshArgs(port, cipher, "cat "+w.Payload), nil, &n)
		if err == nil && n.n != b.size {
			err = fmt.Errorf("bench: pipe download got %d bytes, want %d", n.n, b.size)
		}
		return d, err
	case kindSFTPGet, kindSFTPPut:
		return b.sftp(ctx, port, kind, cipher)
	case kindSCPUp, kindSCPOUp:
		dst := filepath.Join(w.Remote, "scp.bin")
		return b.checked(dst, func() (cmdTimes, error) {
			return runCmd(ctx, c.scpArgs(port, cipher, kind == kindSCPOUp, w.Payload, c.remote(dst)), nil, nil)
		})
	case kindSCPDown, kindSCPODown:
		dst := filepath.Join(w.Local, "scp.bin")
		return b.checked(dst, func() (cmdTimes, error) {
			return runCmd(ctx, c.scpArgs(port, cipher, kind == kindSCPODown, c.remote(w.Payload), dst), nil, nil)
		})
	}
	return cmdTimes{}, fmt.Errorf("bench: unknown transfer %q", kind)
}

// sftp runs a one-line batch: get the payload or put it.
func (b *bench) sftp(ctx context.Context, port int, kind, cipher string) (cmdTimes, error) {
	dst := filepath.Join(b.w.Local, "sftp.bin")
	line := fmt.Sprintf("get %s %s\n", b.w.Payload, dst)
	if kind == kindSFTPPut {
		dst = filepath.Join(b.w.Remote, "sftp.bin")
		line = fmt.Sprintf("put %s %s\n", b.w.Payload, dst)
	}
	batch := filepath.Join(b.w.Dir, kind+".batch")
	if err := os.WriteFile(batch, []byte(line), 0o600); err != nil {
		return cmdTimes{}, fmt.Errorf("bench: %w", err)
	}
	return b.checked(dst, func() (cmdTimes, error) {
		return runCmd(ctx, b.c.sftpArgs(port, cipher, batch), nil, nil)
	})
}

// checked runs f, checks that dst holds the whole payload and removes it.
func (b *bench) checked(dst string, f func() (cmdTimes, error)) (cmdTimes, error) {
	defer os.Remove(dst)
	d, err := f()
	if err != nil {
		return d, err
	}
	return d, checkSize(dst, b.size)
}

// latency times `ssh host true` once.
func (b *bench) latency(ctx context.Context, sv *server) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	d, err := runCmd(ctx, b.c.sshArgs(sv.port, "", "true"), nil, nil)
	if err != nil {
		return Sample{}, err
	}
	return Sample{Seconds: d.Wall.Seconds(), ClientCPUSeconds: d.CPU.Seconds()}, nil
}

// handshakes runs total SSH handshakes (key exchange and public-key user
// authentication, then disconnect) with the x/crypto/ssh client from
// clients goroutines at once, and times them all. The client is in
// process so its own cost stays small next to the server's.
func (b *bench) handshakes(ctx context.Context, sv *server, clients, total int) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cfg := b.clientConfig()
	addr := net.JoinHostPort(b.c.addr, strconv.Itoa(sv.port))
	var left atomic.Int64
	left.Store(int64(total))
	var wg sync.WaitGroup
	errs := make([]error, clients)
	var d time.Duration
	cpu, _, err := measureCPU(sv, func() error {
		start := time.Now()
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Add(-1) >= 0 && ctx.Err() == nil {
					if err := login.Once(ctx, addr, cfg); err != nil {
						errs[i] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		d = time.Since(start)
		return errors.Join(errs...)
	})
	if err != nil {
		return Sample{}, err
	}
	return Sample{Seconds: d.Seconds(), CPUSeconds: cpu, Count: total}, nil
}

// loadClientKeys reads the client key and the host public key for the
// in-process handshakes.
func (b *bench) loadClientKeys() error {
	pem, err := os.ReadFile(b.w.ClientKey)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if b.signer, err = ssh.ParsePrivateKey(pem); err != nil {
		return fmt.Errorf("bench: client key: %w", err)
	}
	pub, err := os.ReadFile(b.w.HostKey + ".pub")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if b.hostKey, _, _, _, err = ssh.ParseAuthorizedKey(pub); err != nil {
		return fmt.Errorf("bench: host key: %w", err)
	}
	return nil
}
