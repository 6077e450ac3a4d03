package remote

import (
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/ipc"
)

// TestBoundsAgree: ipc bounds what it cannot import.
func TestBoundsAgree(t *testing.T) {
	if ipc.MaxLanes != provider.MaxLanes {
		t.Fatalf("ipc.MaxLanes %d, provider.MaxLanes %d", ipc.MaxLanes, provider.MaxLanes)
	}
}

// TestReporterSendsDeltas: what the monitor receives, added up, is what
// the child counted.
func TestReporterSendsDeltas(t *testing.T) {
	monitorEnd, childEnd, err := ipc.Pair()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *ipc.Metrics, 4)
	monitor, err := ipc.NewPeer(monitorEnd, func(m *ipc.Message) {
		if mt, err := ipc.ParseMetrics(m.Payload); err == nil && m.Type == ipc.TypeMetrics {
			got <- mt
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	child, err := ipc.NewPeer(childEnd, func(*ipc.Message) {})
	if err != nil {
		t.Fatal(err)
	}
	go monitor.Run()
	go child.Run()
	defer monitor.Close()
	defer child.Close()

	m := provider.NewMetrics()
	r := NewReporter(child, m)
	c := m.Counter("cpu", "aes128-gcm", provider.OpSeal)
	c.Ops.Add(3)
	c.Bytes.Add(4096)
	r.Flush()
	c.Ops.Add(1)
	r.Flush()
	r.Flush() // nothing new: nothing sent
	var ops, bytes uint64
	for i := 0; i < 2; i++ {
		select {
		case mt := <-got:
			for _, s := range mt.Samples {
				ops, bytes = ops+s.Ops, bytes+s.Bytes
			}
		case <-testenv.Timeout(t):
			t.Fatal("no metrics")
		}
	}
	if ops != 4 || bytes != 4096 {
		t.Fatalf("received %d ops, %d bytes; want 4, 4096", ops, bytes)
	}
	select {
	case mt := <-got:
		t.Fatalf("an empty flush sent %+v", mt)
	case <-time.After(50 * time.Millisecond):
	}
}
