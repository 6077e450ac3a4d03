package connection

import (
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/pkg/sftp"

	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

// discardConn is a PacketConn that drops what is written.
type discardConn struct{ memConn }

func (*discardConn) WritePacket([]byte) error { return nil }

// benchChannel builds a mux and one channel without goroutines.
func benchChannel(b testing.TB) (*mux, *channel) {
	m := &mux{pc: &discardConn{}, cfg: (&Config{}).settings(), perm: &perm.Permissions{},
		ctx: context.Background(), chans: map[uint32]*channel{}}
	m.log = m.cfg.Logger
	c := newChannel(m, 0, openMsg{kind: "session", sender: 7, window: math.MaxUint32, maxPacket: 32768})
	m.chans[0] = c
	return m, c
}

// BenchmarkChannelInbound feeds 32 KiB DATA packets through the read
// loop's dispatch and reads them out, as a session's stdin pump does.
func BenchmarkChannelInbound(b *testing.B) {
	m, c := benchChannel(b)
	pkt := appendChannelMsg(nil, wire.MsgChannelData, 0)
	pkt = wire.AppendBytes(pkt, make([]byte, 32768))
	buf := make([]byte, 32768)
	b.SetBytes(32768)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.dispatch(pkt); err != nil {
			b.Fatal(err)
		}
		for c.in.len() > 0 {
			c.Read(buf)
		}
	}
}

// BenchmarkChannelOutbound sends 32 KiB writes as DATA packets.
func BenchmarkChannelOutbound(b *testing.B) {
	_, c := benchChannel(b)
	data := make([]byte, 32768)
	b.SetBytes(32768)
	b.ReportAllocs()
	for b.Loop() {
		c.outWindow = math.MaxUint32
		if _, err := c.Write(data); err != nil {
			b.Fatal(err)
		}
	}
}

// zeroReader yields zeros forever.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// BenchmarkChannelReadFrom sends from a reader straight into packets, as
// the stdout pump does.
func BenchmarkChannelReadFrom(b *testing.B) {
	_, c := benchChannel(b)
	b.SetBytes(32768)
	b.ReportAllocs()
	lr := &io.LimitedReader{R: zeroReader{}}
	for b.Loop() {
		c.outWindow = math.MaxUint32
		lr.N = 32768
		c.stdout.ReadFrom(lr)
	}
}

// BenchmarkSessionUpload pushes data through Serve, the in-memory pipe
// and a "cat >/dev/null" child, with the default window.
func BenchmarkSessionUpload(b *testing.B) {
	c := startClient(b, nil, self(b))
	ch, err := c.open("session", 1<<20, 32768, nil)
	if err != nil {
		b.Fatal(err)
	}
	ch.req("exec", true, wire.AppendString(nil, "cat >/dev/null"))
	data := make([]byte, 32768)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		ch.write(data)
	}
	ch.sendEOF()
	ch.waitClosed(b)
}

// BenchmarkSFTPGet reads a 16 MiB file through the in-process SFTP
// server with pkg/sftp's client (concurrent reads, as OpenSSH's sftp).
func BenchmarkSFTPGet(b *testing.B) {
	c := startClient(b, nil, self(b))
	ch, err := c.open("session", 8<<20, 32768, nil)
	if err != nil {
		b.Fatal(err)
	}
	ch.req("subsystem", true, wire.AppendString(nil, "sftp"))
	sc, err := sftp.NewClientPipe(ch, ch)
	if err != nil {
		b.Fatal(err)
	}
	defer sc.Close()
	path := filepath.Join(b.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 16<<20), 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(16 << 20)
	b.ReportAllocs()
	for b.Loop() {
		f, err := sc.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkChannelHandOff sends 32 KiB DATA messages from the read loop
// to a reader goroutine, as pumpStdin reads them during an upload.
func BenchmarkChannelHandOff(b *testing.B) {
	m, c := benchChannel(b)
	c.inWindow = math.MaxUint32
	pkt := wire.AppendBytes(appendChannelMsg(nil, wire.MsgChannelData, 0), make([]byte, 32768))
	done := make(chan struct{})
	go func() {
		buf := make([]byte, 32768)
		for {
			if _, err := c.Read(buf); err != nil {
				close(done)
				return
			}
		}
	}()
	b.SetBytes(32768)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.dispatch(pkt); err != nil {
			b.Fatal(err)
		}
	}
	m.dispatch(appendChannelMsg(nil, wire.MsgChannelEOF, 0))
	<-done
}
