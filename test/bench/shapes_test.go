package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDelayProxy: bytes arrive intact in both directions, and an echo
// through the proxy takes at least the round-trip time it emulates.
func TestDelayProxy(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	const rtt = 40 * time.Millisecond
	p, err := newDelayProxy("127.0.0.1", l.Addr().String(), rtt, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p.Port()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A small echo: one round trip.
	start := time.Now()
	c.Write([]byte("ping"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo %q, %v", buf, err)
	}
	if d := time.Since(start); d < rtt {
		t.Errorf("echo through a %v proxy took %v", rtt, d)
	}
	// More than the proxy buffers: backpressure, nothing lost or reordered.
	want := make([]byte, 3<<20)
	rand.Read(want)
	go func() { c.Write(want); c.(*net.TCPConn).CloseWrite() }()
	got, err := io.ReadAll(c)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("echoed %d bytes (equal %v), want %d: %v", len(got), bytes.Equal(got, want), len(want), err)
	}
	if _, err := newDelayProxy("10.0.0.1", l.Addr().String(), rtt, 1<<20); err == nil {
		t.Error("a proxy on a non-loopback address was started")
	}
}

func TestProxyCeiling(t *testing.T) {
	mbps, err := proxyCeiling(context.Background(), "127.0.0.1", 10*time.Millisecond, 4<<20)
	if err != nil || mbps <= 0 {
		t.Fatalf("ceiling %v, %v", mbps, err)
	}
}

func TestParseStatmAndTreeRSS(t *testing.T) {
	if n, err := parseStatmRSS("1000 250 30 1 0 80 0\n"); err != nil || n != 250 {
		t.Errorf("statm: %d, %v", n, err)
	}
	for _, bad := range []string{"", "12", "1 -3", "1 x"} {
		if _, err := parseStatmRSS(bad); err == nil {
			t.Errorf("parseStatmRSS(%q) succeeded", bad)
		}
	}
	dir := t.TempDir()
	write := func(pid, ppid, rss int) {
		d := filepath.Join(dir, strconv.Itoa(pid))
		os.Mkdir(d, 0o755)
		os.WriteFile(filepath.Join(d, "stat"), []byte(stat(pid, ppid, 0, 0, 0, 0)), 0o644)
		os.WriteFile(filepath.Join(d, "statm"), []byte("1 "+strconv.Itoa(rss)+" 0 0 0 0 0\n"), 0o644)
	}
	write(10, 1, 100)
	write(11, 10, 20)
	write(12, 11, 3)
	write(13, 1, 1000) // not in the tree
	got, err := treeRSS(dir, 10)
	if err != nil || got != 123*int64(os.Getpagesize()) {
		t.Errorf("treeRSS = %d, %v", got, err)
	}
	if _, err := treeRSS(dir, 99); err == nil {
		t.Error("treeRSS of a missing process succeeded")
	}
}

func TestPercentileAndForEach(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if percentile(xs, 0.5) != 5 || percentile(xs, 0.99) != 10 || percentile(nil, 0.5) != 0 {
		t.Errorf("percentiles %v %v", percentile(xs, 0.5), percentile(xs, 0.99))
	}
	var n, peak, cur atomic.Int64
	err := forEach(context.Background(), 50, 4, func(int) error {
		if c := cur.Add(1); c > peak.Load() {
			peak.Store(c)
		}
		time.Sleep(time.Millisecond)
		cur.Add(-1)
		n.Add(1)
		return nil
	})
	if err != nil || n.Load() != 50 || peak.Load() > 4 {
		t.Errorf("forEach: %v, ran %d, peak %d", err, n.Load(), peak.Load())
	}
	boom := errors.New("boom")
	if err := forEach(context.Background(), 1000, 2, func(i int) error {
		if i == 3 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) {
		t.Errorf("forEach error: %v", err)
	}
}

func TestShapePlanAndFlags(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseOptions([]string{"-only", "shapes", "-streams", "1,4", "-rtt", "20ms,100ms", "-idle", "10",
		"-small-files", "7", "-rtt-size", "1MiB"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.kinds[kindPipeUp] || !o.kinds[kindStreams] || !o.kinds[kindIdle] || o.SmallFiles != 7 || o.RTTSize != 1<<20 {
		t.Fatalf("options %+v", o)
	}
	specs := []serverSpec{{Name: srvOpenSSH, Sessions: true}, {Name: srvOffload, Sessions: true}, {Name: srvSoftware}}
	plan := makePlan(o.Settings, specs, o.kinds)
	// 2 stream counts + 2 small-file directions + 2 RTTs × 2 directions + 1 idle count
	if len(plan) != 2+2+4+1 {
		t.Fatalf("plan has %d tasks: %+v", len(plan), plan)
	}
	for _, tk := range plan {
		if len(tk.Servers) != 2 || (strings.HasPrefix(tk.Kind, "rtt") && tk.RTTMillis == 0) {
			t.Errorf("task %+v", tk)
		}
	}
	for _, bad := range [][]string{{"-rtt", "0ms"}, {"-rtt", "fast"}, {"-small-files", "0"}, {"-streams", "0"}, {"-only", "nope"}} {
		if _, err := parseOptions(bad, &stderr); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestShapesMarkdown(t *testing.T) {
	r := sampleReport()
	r.Settings.SmallFiles, r.Settings.SmallFileSize = 10000, 4096
	add := func(c *Case) {
		c.summarize()
		r.Cases = append(r.Cases, c)
	}
	add(&Case{Kind: kindStreams, Cipher: "aes128-gcm@openssh.com", Clients: 4, Server: srvOpenSSH,
		Samples: []Sample{{Seconds: 2, Bytes: 400e6, StreamMinMBps: 40, StreamMaxMBps: 80}}})
	add(&Case{Kind: kindSmallPut, Cipher: "aes128-gcm@openssh.com", Server: srvOffload, Samples: []Sample{{Seconds: 2, Count: 10000}}})
	add(&Case{Kind: kindRTTUp, Cipher: "aes128-gcm@openssh.com", RTTMillis: 100, Server: srvOpenSSH, Samples: []Sample{{Seconds: 10, Bytes: 200e6}}})
	add(&Case{Kind: kindIdle, Clients: 1000, Server: srvOffload,
		Samples: []Sample{{Seconds: 4, Count: 1000, RSSPerConnKiB: 55, AcceptP50Ms: 3, AcceptP99Ms: 9}}})
	r.ProxyCeilings = []ProxyCeiling{{RTTMillis: 100, MBPerSec: 900}}
	var b bytes.Buffer
	if err := writeMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"concurrent-upload aes128-gcm@openssh.com", "200", "40.0 – 80.0 (0.50)",
		"5000", "rtt-pipe-upload aes128-gcm@openssh.com, 100 ms RTT", "20.0", "100 ms RTT 900 MB/s",
		"idle-connections, 1000 clients", "55 KiB, 3.0 / 9.0 ms, 250/s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b.String())
		}
	}
}

// BenchmarkDelayProxy is the proxy's own ceiling: go test -run '^$'
// -bench DelayProxy ./test/bench (MB/s reported per RTT).
func BenchmarkDelayProxy(b *testing.B) {
	for _, rtt := range []time.Duration{0, 20 * time.Millisecond, 100 * time.Millisecond} {
		b.Run(rtt.String(), func(b *testing.B) {
			var sum float64
			for range b.N {
				mbps, err := proxyCeiling(context.Background(), "127.0.0.1", rtt, 256<<20)
				if err != nil {
					b.Fatal(err)
				}
				sum += mbps
			}
			b.ReportMetric(sum/float64(b.N), "MB/s")
		})
	}
}
