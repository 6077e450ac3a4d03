package monitor

import (
	"bytes"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/loginrec"
)

func sampleState() *handoverState {
	start := time.Date(2026, 12, 5, 15, 0, 0, 123, time.UTC)
	return &handoverState{Version: handoverVersion, HostPublicKeys: [][]byte{{1, 2}, {3}},
		Children: []childState{
			{Name: "offload-sshd: alice", Key: "alice", User: "alice", PID: 4242, File: 0, Session: 1,
				Identity: &ipc.Identity{Uid: 1000, Gid: 1000, Groups: []uint32{4, 27}},
				Conns: []connState{{ID: 7, Local: "127.0.0.1:22", Remote: "192.0.2.1:5000", User: "alice",
					SessionID: bytes.Repeat([]byte{5}, 32), HostKey: []byte{6}, Start: start,
					TTYs: []loginrec.Record{{User: "alice", UID: 1000, PID: 99, TTY: "/dev/pts/3", Host: "192.0.2.1",
						Addr: netip.MustParseAddr("192.0.2.1"), Time: start}}}}},
			{Name: "offload-sshd: bob", Key: "bob", User: "bob", File: 2, Session: -1,
				Identity: &ipc.Identity{Groups: []uint32{}}, Conns: []connState{{ID: 8}}},
		}}
}

// TestHandoverStateRoundTrip: the keeper reads what the monitor wrote;
// every cut and a trailing byte are refused.
func TestHandoverStateRoundTrip(t *testing.T) {
	want := sampleState()
	b := marshalState(t, want)
	got, err := parseHandoverState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v\nwant %+v", got, want)
	}
	for n := 0; n < len(b); n++ {
		if _, err := parseHandoverState(b[:n]); err == nil {
			t.Fatalf("cut to %d of %d bytes was accepted", n, len(b))
		}
	}
	if _, err := parseHandoverState(append(b, 0)); err == nil {
		t.Fatal("a trailing byte was accepted")
	}
}

// FuzzHandoverState: the decoder never panics, and what it accepts
// encodes to a state that decodes to the same.
func FuzzHandoverState(f *testing.F) {
	for _, st := range []*handoverState{sampleState(), {Version: handoverVersion}} {
		b, _ := st.marshal()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseHandoverState(b)
		if err != nil {
			return
		}
		again, err := st.marshal()
		if err != nil {
			t.Fatalf("accepted %x but cannot encode it: %v", b, err)
		}
		st2, err := parseHandoverState(again)
		if err != nil {
			t.Fatalf("re-encoded %x refused: %v", again, err)
		}
		if third, _ := st2.marshal(); !bytes.Equal(third, again) {
			t.Fatalf("encoding not stable: %x then %x", again, third)
		}
	})
}
