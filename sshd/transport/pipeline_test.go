package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offload/offload/internal/lanetest"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/wire"
)

// laneRegistry puts the GCM ciphers on lp, before the CPU and software
// providers.
func laneRegistry(t testing.TB, lp *lanetest.Provider) *provider.Registry {
	t.Helper()
	reg, err := lp.Registry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return reg
}

// pipedLoop is a packet writer and reader joined by a pipe, both
// pipelined over a lanetest provider's AES-GCM.
type pipedLoop struct {
	w  *packetWriter
	r  *packetReader
	pr *io.PipeReader
	pw *io.PipeWriter
	wg sync.WaitGroup
}

func newPipedLoop(t testing.TB, lp *lanetest.Provider, depth int) *pipedLoop {
	t.Helper()
	cs := findCipher("aes128-gcm@openssh.com")
	k := directionKeys{iv: randBytes(cs.ivSize), key: randBytes(cs.keySize)}
	reg := laneRegistry(t, lp)
	wc, err := newPacketCipher(reg, cs, nil, k)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := newPacketCipher(reg, cs, nil, k)
	if err != nil {
		t.Fatal(err)
	}
	l := &pipedLoop{}
	l.pr, l.pw = io.Pipe()
	l.w = newPacketWriter(l.pw, [32]byte{1})
	l.r = newPacketReader(l.pr)
	l.w.install(wc, depth, nil)
	l.r.install(rc, depth)
	if l.w.pipe == nil || l.r.pipe == nil {
		t.Fatalf("no pipeline over %d lanes (depth %d)", lp.Lanes, depth)
	}
	t.Cleanup(l.close)
	return l
}

// writeFrom writes numbered packets from 0 on, from another goroutine,
// until n are written or a write fails; the result comes on the channel.
func (l *pipedLoop) writeFrom(n int) <-chan error {
	res := make(chan error, 1)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for i := range n {
			if err := l.w.write(numbered(i)); err != nil {
				res <- err
				return
			}
		}
		res <- nil
	}()
	return res
}

// close ends both sides: the writer's goroutine first, then the pipelines.
func (l *pipedLoop) close() {
	l.pr.CloseWithError(io.ErrClosedPipe)
	l.pw.Close()
	l.wg.Wait()
	l.w.install(noneCipher{}, 0, nil)
	l.r.install(noneCipher{}, 0)
}

// numbered is payload i: its number, then filler of a size that varies.
func numbered(i int) []byte {
	n := 5 + (i*7919)%(34<<10)
	p := make([]byte, n)
	p[0] = wire.MsgIgnore
	binary.BigEndian.PutUint32(p[1:], uint32(i))
	for j := 5; j < n; j++ {
		p[j] = byte(i + j)
	}
	return p
}

// TestPipelineOrder: packets of many sizes sealed and opened several at
// a time, with every call taking a random while, arrive complete and in
// order; the lanes really ran at once.
func TestPipelineOrder(t *testing.T) {
	lp := &lanetest.Provider{Lanes: 4, Delay: 100 * time.Microsecond, Jitter: true}
	l := newPipedLoop(t, lp, 0)
	const n = 400
	written := l.writeFrom(n)
	for i := range n {
		p, err := l.r.read()
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if !bytes.Equal(p, numbered(i)) {
			t.Fatalf("packet %d: got packet %d (%d bytes), want %d bytes", i, binary.BigEndian.Uint32(p[1:]), len(p), len(numbered(i)))
		}
	}
	if lp.Peak() < 2 {
		t.Errorf("at most %d calls ran at once", lp.Peak())
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if l.r.seq != n || l.w.seq != n {
		t.Errorf("sequence numbers %d/%d, want %d", l.w.seq, l.r.seq, n)
	}
}

// TestPipelineSealFault: a seal fails while later packets are in
// flight. The wire carries an unbroken prefix of the packets, in order,
// ending before the failed one; the writer reports the fault from then on.
func TestPipelineSealFault(t *testing.T) {
	lp := &lanetest.Provider{Lanes: 4, Delay: 50 * time.Microsecond, Jitter: true}
	l := newPipedLoop(t, lp, 8)
	const k = 37
	lp.FailSeal(k + 1) // the 38th call: one of the packets in flight then
	werr := l.writeFrom(1 << 20)
	got := 0
	for {
		p, err := l.r.read()
		if err != nil {
			break
		}
		if !bytes.Equal(p, numbered(got)) {
			t.Fatalf("packet %d: got packet %d", got, binary.BigEndian.Uint32(p[1:]))
		}
		got++
		if got == k-8 { // the fault is near: let the writer end the stream
			go func() {
				err := <-werr
				var pe *ProviderError
				if !errors.As(err, &pe) || !errors.Is(err, lanetest.ErrFault) || pe.Op != "seal" {
					t.Errorf("write after the fault: %v, want the seal's ProviderError", err)
				}
				if err := l.w.stopPipe(); !errors.Is(err, lanetest.ErrFault) {
					t.Errorf("stopPipe: %v", err)
				}
				l.pw.Close()
			}()
		}
	}
	if got < k-8 || got > k+8 {
		t.Errorf("%d packets reached the wire; the fault was in packet %d±8", got, k)
	}
}

// TestPipelineOpenFault: an open fails while later packets are in
// flight: the packets before it are delivered in order, then the
// provider's error, never a later packet.
func TestPipelineOpenFault(t *testing.T) {
	lp := &lanetest.Provider{Lanes: 4, Delay: 50 * time.Microsecond, Jitter: true}
	l := newPipedLoop(t, lp, 8)
	const k = 23
	lp.FailOpen(k + 1)
	l.writeFrom(100)
	got := 0
	var err error
	for {
		var p []byte
		if p, err = l.r.read(); err != nil {
			break
		}
		if !bytes.Equal(p, numbered(got)) {
			t.Fatalf("packet %d: got packet %d", got, binary.BigEndian.Uint32(p[1:]))
		}
		got++
	}
	var de *DisconnectError
	if !errors.As(err, &de) || de.Reason != wire.DisconnectByApplication || !errors.Is(err, lanetest.ErrFault) {
		t.Fatalf("after packet %d: %v, want the provider's fault", got, err)
	}
	if got < k-8 || got > k+8 {
		t.Errorf("%d packets delivered; the fault was in packet %d±8", got, k)
	}
}

// TestPipelineHostileInput: after good packets, a corrupted one, a bad
// length and a stream cut mid-packet are each reported at their place,
// after every packet before them, as the serial reader reports them.
func TestPipelineHostileInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(stream []byte, ends []int) []byte // ends: where each packet ends
		want   func(error) bool
	}{
		{"corrupt", func(s []byte, e []int) []byte { s[e[5]+9] ^= 1; return s }, isMACError},
		{"oversized length", func(s []byte, e []int) []byte {
			binary.BigEndian.PutUint32(s[e[5]:], MaxPacket+16)
			return s
		}, isProtocolError},
		{"truncated", func(s []byte, e []int) []byte { return s[:e[5]+100] }, isConnLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream, ends, keys := sealedStream(t, 12)
			stream = tc.damage(stream, ends)
			for _, piped := range []bool{false, true} {
				got, err := readAll(t, stream, keys, piped)
				if len(got) != 6 || !tc.want(err) {
					t.Errorf("pipelined %v: %d packets then %v", piped, len(got), err)
				}
				for i, p := range got {
					if !bytes.Equal(p, numbered(i)) {
						t.Errorf("pipelined %v: packet %d differs", piped, i)
					}
				}
			}
		})
	}
}

func isMACError(err error) bool {
	var de *DisconnectError
	return errors.As(err, &de) && de.Reason == wire.DisconnectMACError
}

func isProtocolError(err error) bool {
	var de *DisconnectError
	return errors.As(err, &de) && de.Reason == wire.DisconnectProtocolError
}

func isConnLost(err error) bool {
	var de *DisconnectError
	return errors.As(err, &de) && de.Reason == wire.DisconnectConnectionLost
}

// sealedStream returns n numbered packets sealed with the CPU's AES-GCM,
// where each ends, and the keys.
func sealedStream(t testing.TB, n int) ([]byte, []int, directionKeys) {
	return sealedStreamOf(t, n, numbered)
}

func sealedStreamOf(t testing.TB, n int, payload func(int) []byte) ([]byte, []int, directionKeys) {
	cs := findCipher("aes128-gcm@openssh.com")
	k := directionKeys{iv: bytes.Repeat([]byte{1}, cs.ivSize), key: bytes.Repeat([]byte{2}, cs.keySize)}
	wc, err := newPacketCipher(testRegistry(t), cs, nil, k)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := newPacketWriter(&buf, [32]byte{1})
	w.c = wc
	var ends []int
	for i := range n {
		if err := w.write(payload(i)); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, buf.Len())
	}
	wc.Close()
	return buf.Bytes(), ends, k
}

// readAll reads stream with a serial reader or a pipelined one until an
// error, returning copies of the payloads.
func readAll(t testing.TB, stream []byte, k directionKeys, piped bool) ([][]byte, error) {
	cs := findCipher("aes128-gcm@openssh.com")
	lp := &lanetest.Provider{Lanes: 3}
	reg := testRegistry(t)
	if piped {
		reg = laneRegistry(t, lp)
	}
	rc, err := newPacketCipher(reg, cs, nil, k)
	if err != nil {
		t.Fatal(err)
	}
	r := newPacketReader(bytes.NewReader(stream))
	r.install(rc, 0)
	defer r.install(noneCipher{}, 0)
	if piped != (r.pipe != nil) {
		t.Fatalf("pipelined %v, reader pipe %v", piped, r.pipe != nil)
	}
	var out [][]byte
	for {
		p, err := r.read()
		if err != nil {
			return out, err
		}
		out = append(out, bytes.Clone(p))
	}
}

// TestPipelineUnread: stopping the read pipeline puts the packets read
// ahead back, and the cipher's nonce with them: a serial reader then
// reads them.
func TestPipelineUnread(t *testing.T) {
	stream, _, k := sealedStream(t, 10)
	lp := &lanetest.Provider{Lanes: 4}
	rc, err := newPacketCipher(laneRegistry(t, lp), findCipher("aes128-gcm@openssh.com"), nil, k)
	if err != nil {
		t.Fatal(err)
	}
	r := newPacketReader(bytes.NewReader(stream))
	r.install(rc, 0)
	for i := range 3 {
		if p, err := r.read(); err != nil || !bytes.Equal(p, numbered(i)) {
			t.Fatalf("packet %d: %v", i, err)
		}
	}
	if r.pipe.n == 0 {
		t.Fatal("nothing was read ahead")
	}
	r.stopPipe()
	for i := 3; i < 10; i++ {
		if p, err := r.read(); err != nil || !bytes.Equal(p, numbered(i)) {
			t.Fatalf("packet %d after the pipeline stopped: %v", i, err)
		}
	}
	if _, err := r.read(); !isConnLost(err) {
		t.Fatalf("after the last packet: %v", err)
	}
	rc.Close()
}

// TestPipelineDepth: the depth follows the lanes and the configuration;
// a one-lane AEAD is never pipelined.
func TestPipelineDepth(t *testing.T) {
	cs := findCipher("aes128-gcm@openssh.com")
	k := directionKeys{iv: randBytes(cs.ivSize), key: randBytes(cs.keySize)}
	for _, tc := range []struct{ lanes, configured, want int }{
		{1, 0, 0}, {1, 8, 0}, {4, 0, 8}, {4, 1, 0}, {4, 3, 3}, {64, 0, maxPipeDepth}, {4, 100, maxPipeDepth},
	} {
		c, err := newPacketCipher(laneRegistry(t, &lanetest.Provider{Lanes: tc.lanes}), cs, nil, k)
		if err != nil {
			t.Fatal(err)
		}
		if _, got := pipeDepth(c, tc.configured); got != tc.want {
			t.Errorf("%d lanes, PipelineDepth %d: depth %d, want %d", tc.lanes, tc.configured, got, tc.want)
		}
		c.Close()
	}
	c, _ := newPacketCipher(testRegistry(t), cs, nil, k)
	if _, got := pipeDepth(c, 0); got != 0 {
		t.Errorf("CPU AES-GCM pipelined %d deep", got)
	}
	c.Close()
	if _, err := NewServer(&Config{Registry: testRegistry(t), HostKeys: allHostKeys(t), PipelineDepth: -1}); err == nil {
		t.Error("PipelineDepth -1 accepted")
	}
}

// TestPipelinedConnection: a whole connection over a pipelined AEAD, with
// re-exchanges every few hundred KiB in the middle of uploads and
// downloads (the client's packets after its NEWKEYS are read ahead under
// the old keys and must be read again under the new ones).
func TestPipelinedConnection(t *testing.T) {
	lp := &lanetest.Provider{Lanes: 4, Delay: 20 * time.Microsecond, Jitter: true}
	ts := newTestServer(t, &Config{Registry: laneRegistry(t, lp), RekeyBytes: 300 << 10})
	for _, c := range []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com"} {
		cl, reqs := ts.dial(t, clientConfig("curve25519-sha256", c, "", "ssh-ed25519"))
		conn, err := ts.lastConn()
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); push(t, cl, 2<<20) }()
		pullFrom(t, cl, reqs, 2<<20)
		wg.Wait()
		push(t, cl, 1<<20)
		conn.wmu.Lock()
		piped := conn.wr.pipe != nil
		conn.wmu.Unlock()
		if !piped || conn.KexCount() < 4 {
			t.Errorf("%s: write side pipelined %v, %d key exchanges", c, piped, conn.KexCount())
		}
		cl.Close()
		conn.rmu.Lock()
		t.Logf("%s: %d key exchanges, read-ahead put back %d times", c, conn.KexCount(), conn.rd.reread)
		conn.rmu.Unlock()
	}
	if lp.Peak() < 2 {
		t.Errorf("at most %d token calls ran at once", lp.Peak())
	}
}

// TestPipelinedConnectionFault: the token fails under a download with
// packets in flight. The client gets an unbroken prefix of the data, in
// order and without repeats, and then the connection ends; the server
// keeps serving other connections.
func TestPipelinedConnectionFault(t *testing.T) {
	lp := &lanetest.Provider{Lanes: 4, Delay: 30 * time.Microsecond, Jitter: true}
	ts := newTestServer(t, &Config{Registry: laneRegistry(t, lp)})
	cl, reqs := ts.dial(t, clientConfig("curve25519-sha256", "aes128-gcm@openssh.com", "", "ssh-ed25519"))
	conn, _ := ts.lastConn()
	lp.FailSeal(60)
	go func() {
		for i := range 1000 {
			p := wire.AppendString([]byte{wire.MsgGlobalRequest}, "n")
			p = wire.AppendUint32(wire.AppendBool(p, false), uint32(i))
			if conn.WritePacket(append(p, make([]byte, 8<<10)...)) != nil {
				return
			}
		}
	}()
	next := uint32(0)
	for req := range reqs {
		if req.Type != "n" {
			continue
		}
		if got := binary.BigEndian.Uint32(req.Payload); got != next {
			t.Fatalf("packet %d arrived when %d was due", got, next)
		}
		next++
	}
	if next == 0 || next >= 1000 {
		t.Fatalf("%d packets arrived before the fault; want some, not all", next)
	}
	cl.Close()
	cl2, _ := ts.dial(t, clientConfig("curve25519-sha256", "aes128-gcm@openssh.com", "", "ssh-ed25519"))
	push(t, cl2, 256<<10)
	var pe *ProviderError
	if errs := ts.connErrors(); len(errs) == 0 || !errors.As(errs[0], &pe) || pe.Op != "seal" {
		t.Errorf("the connection ended with %v, want the seal's ProviderError", errs)
	}
}

// TestPipelinedExport: a connection whose read side has packets read
// ahead (the upload right after "handover") exports them as unread bytes
// and the resumed connection, pipelined too, reads them again where it
// stood; nothing is lost or repeated either way.
func TestPipelinedExport(t *testing.T) {
	lp := &lanetest.Provider{Lanes: 4, Delay: 100 * time.Microsecond}
	hs := newHandoverServer(t, &Config{Registry: laneRegistry(t, lp)}, &Config{Registry: laneRegistry(t, lp), RekeyBytes: 256 << 10})
	cl, reqs := hs.dial(t, clientConfig("curve25519-sha256", "aes128-gcm@openssh.com", "", ""))
	if _, _, err := cl.SendRequest("handover", false, nil); err != nil {
		t.Fatal(err)
	}
	push(t, cl, 1<<20)
	st := <-hs.states
	t.Logf("buffered at hand-over: %d bytes", len(st.Buffered))
	pullFrom(t, cl, reqs, 1<<20)
	push(t, cl, 1<<20)
	c, err := hs.lastConn()
	if err != nil {
		t.Fatal(err)
	}
	c.wmu.Lock()
	piped := c.wr.pipe != nil
	c.wmu.Unlock()
	if !piped || c.KexCount() < 3 {
		t.Errorf("resumed connection: pipelined %v, %d key exchanges", piped, c.KexCount())
	}
}

// small is payload i of the fuzz streams: its number and up to 2 KiB.
func small(i int) []byte {
	p := numbered(i)
	return p[:min(len(p), 5+(i*7919)%2048)]
}

// FuzzPipelinedRead damages a stream of sealed packets (bytes written
// over at an offset, then a cut) and reads it with the serial reader and
// the pipelined one: both must return the same packets in the same order
// and then fail the same way, without panicking or hanging.
func FuzzPipelinedRead(f *testing.F) {
	f.Add(uint8(6), uint32(0), []byte{}, uint32(0))
	f.Add(uint8(6), uint32(3000), []byte{0xff}, uint32(0))
	f.Add(uint8(9), uint32(1500), []byte{0, 4, 0, 0}, uint32(0))
	f.Add(uint8(12), uint32(0), []byte{}, uint32(7000))
	f.Add(uint8(3), uint32(0), []byte{0, 0, 0, 5}, uint32(0))
	f.Fuzz(func(t *testing.T, n uint8, off uint32, patch []byte, cut uint32) {
		stream, _, k := sealedStreamOf(t, int(n%16)+1, small)
		if len(patch) > 64 {
			patch = patch[:64]
		}
		copy(stream[int(off)%len(stream):], patch)
		if cut != 0 {
			stream = stream[:int(cut)%(len(stream)+1)]
		}
		serial, serr := readAll(t, stream, k, false)
		piped, perr := readAll(t, stream, k, true)
		if len(serial) != len(piped) {
			t.Fatalf("serial reader returned %d packets, pipelined %d (%v / %v)", len(serial), len(piped), serr, perr)
		}
		for i := range serial {
			if !bytes.Equal(serial[i], piped[i]) {
				t.Fatalf("packet %d differs", i)
			}
		}
		var se, pe *DisconnectError
		if !errors.As(serr, &se) || !errors.As(perr, &pe) || se.Reason != pe.Reason {
			t.Fatalf("serial reader failed with %v, pipelined with %v", serr, perr)
		}
	})
}

// BenchmarkPipelineLatency moves 8 MiB each way over one connection whose
// AES-GCM takes delay per call over up to lanes calls at once (a network
// HSM, lanetest), serial (PipelineDepth 1) and pipelined at the default
// depth: the pipeline's own ceiling, without a token's CPU cost.
func BenchmarkPipelineLatency(b *testing.B) {
	for _, delay := range []time.Duration{200 * time.Microsecond, 2 * time.Millisecond} {
		for _, lanes := range []int{4, 8} {
			for _, depth := range []int{1, 0} {
				lp := &lanetest.Provider{Lanes: lanes, Delay: delay}
				ts := newTestServer(b, &Config{Registry: laneRegistry(b, lp), PipelineDepth: depth})
				cl, reqs := ts.dial(b, clientConfig("curve25519-sha256", "aes128-gcm@openssh.com", "", "ssh-ed25519"))
				name := fmt.Sprintf("delay=%v/lanes=%d/depth=%d", delay, lanes, depth)
				b.Run(name+"/upload", func(b *testing.B) {
					b.SetBytes(8 << 20)
					for b.Loop() {
						push(b, cl, 8<<20)
					}
				})
				b.Run(name+"/download", func(b *testing.B) {
					b.SetBytes(8 << 20)
					for b.Loop() {
						pullFrom(b, cl, reqs, 8<<20)
					}
					b.ReportMetric(float64(lp.Peak()), "peak")
				})
				cl.Close()
			}
		}
	}
}

// TestPipelinedDisconnectFlushes: packets still in flight when the
// server disconnects reach the client before the DISCONNECT, in order.
func TestPipelinedDisconnectFlushes(t *testing.T) {
	lp := &lanetest.Provider{Lanes: 4, Delay: 500 * time.Microsecond}
	ts := newTestServer(t, &Config{Registry: laneRegistry(t, lp)})
	cl, reqs := ts.dial(t, clientConfig("curve25519-sha256", "aes128-gcm@openssh.com", "", "ssh-ed25519"))
	conn, _ := ts.lastConn()
	const n = 64
	go func() {
		for i := range n {
			p := wire.AppendString([]byte{wire.MsgGlobalRequest}, "n")
			p = wire.AppendUint32(wire.AppendBool(p, false), uint32(i))
			if conn.WritePacket(p) != nil {
				return
			}
		}
		conn.Disconnect(wire.DisconnectByApplication, "bye")
	}()
	got := uint32(0)
	for req := range reqs {
		if req.Type == "n" {
			if v := binary.BigEndian.Uint32(req.Payload); v != got {
				t.Fatalf("packet %d arrived when %d was due", v, got)
			}
			got++
		}
	}
	if got != n {
		t.Errorf("%d of %d packets arrived before the connection ended", got, n)
	}
	if err := cl.Wait(); err == nil || !strings.Contains(err.Error(), "bye") {
		t.Errorf("the client saw the end as %v, want the DISCONNECT", err)
	}
}
