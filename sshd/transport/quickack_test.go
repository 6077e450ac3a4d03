package transport

import (
	"net"
	"testing"
)

func TestQuickAckerBudget(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan net.Conn, 1)
	go func() { c, _ := l.Accept(); done <- c }()
	cc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sc := <-done
	if sc == nil {
		t.Fatal("accept failed")
	}
	defer sc.Close()

	q := newQuickAcker(sc)
	if q.rc == nil || q.left != quickAckPackets {
		t.Fatalf("TCP connection: quickAcker %+v, want a socket and %d acks", q, quickAckPackets)
	}
	for range quickAckPackets + 5 {
		q.ack()
	}
	if q.left != 0 {
		t.Errorf("after %d acks, %d left; the budget must stop at 0", quickAckPackets+5, q.left)
	}

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	p := newQuickAcker(a)
	if p.rc != nil {
		t.Errorf("net.Pipe has no socket, got a RawConn")
	}
	p.ack() // must be a no-op, not a panic
}
