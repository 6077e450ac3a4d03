package ipc

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogRelay: a child's record reaches the monitor's log with its
// attributes as the child's text log would show them, sorted, numbers
// exact.
func TestLogRelay(t *testing.T) {
	var out syncBuffer
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	monitorEnd, childEnd, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	monitor, err := NewPeer(monitorEnd, func(m *Message) {
		if l, err := ParseLog(m.Payload); err == nil {
			Relay(log, "w1", l)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	child, err := NewPeer(childEnd, func(*Message) {})
	if err != nil {
		t.Fatal(err)
	}
	go monitor.Run()
	go child.Run()
	defer monitor.Close()
	defer child.Close()

	clog := slog.New(NewLogHandler(child, slog.LevelInfo)).With("user", "alice")
	clog.Debug("not sent")
	clog.Info("hello", "conn", 5, "bytes", uint64(1500000), "err", errors.New("boom"), "d", time.Second,
		"ok", true, "list", []string{"a", "b"})
	want := `level=INFO msg=hello proc=w1 bytes=1500000 conn=5 d=1s err=boom list="[a b]" ok=true user=alice`
	if !testenv.WaitUntil(t, func() bool { return strings.Contains(out.String(), want) }) {
		t.Fatalf("relayed %q, want %q", out.String(), want)
	}
	if strings.Contains(out.String(), "not sent") {
		t.Fatal("a record below the level was sent")
	}
}

func TestLogAttrsTooLong(t *testing.T) {
	attrs := map[string]any{"a": strings.Repeat("x", maxLogLine)}
	if got := sortedAttrs(attrs); len(got) != 1 || got[0].Key != "attrs" {
		t.Fatalf("over-long attributes sent as %v", got)
	}
}
