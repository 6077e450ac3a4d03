package ipc

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestDetach: a detached peer's socket is read by its successor from the
// next message on, with nothing lost or read twice: what the old peer
// had not read when it detached, the new one reads, in order.
func TestDetach(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	record := func(who string, m *Message) {
		mu.Lock()
		seen = append(seen, who+":"+string(m.Payload))
		mu.Unlock()
	}
	var b, n atomic.Pointer[Peer] // set after the peers start
	a, bb := pair(t, func(m *Message) {
		record("old", m)
		b.Load().Reply(m, []byte("old"), nil)
	})
	b.Store(bb)
	ctx := context.Background()
	if r, err := a.Call(ctx, TypeSign, []byte("0")); err != nil || string(r) != "old" {
		t.Fatalf("before: %q %v", r, err)
	}
	for i := 1; i <= 20; i++ { // some read by the old peer, the rest queued
		if err := a.Notify(TypeLog, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	f, err := bb.Detach()
	if err != nil {
		t.Fatal(err)
	}
	np, err := NewPeer(f, func(m *Message) {
		record("new", m)
		n.Load().Reply(m, []byte("new"), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	n.Store(np)
	go np.Run()
	t.Cleanup(func() { np.Close() })
	if r, err := a.Call(ctx, TypeSign, []byte("after")); err != nil || string(r) != "new" {
		t.Fatalf("after: %q %v", r, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 22 {
		t.Fatalf("%d messages read, want 22: %v", len(seen), seen)
	}
	switched := false
	for i, s := range seen {
		who, payload, _ := strings.Cut(s, ":")
		want := fmt.Sprint(i)
		if i == 21 {
			want = "after"
		}
		switched = switched || who == "new"
		if payload != want || (switched && who == "old") {
			t.Fatalf("message %d is %q: %v", i, s, seen)
		}
	}
}
