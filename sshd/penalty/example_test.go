package penalty_test

import (
	"fmt"
	"net/netip"

	"github.com/offload/offload/sshd/penalty"
)

func Example() {
	cfg, _ := penalty.ParsePenalties(penalty.Defaults(), []string{"authfail:20s"})
	t, _ := penalty.New(&cfg, nil, nil)
	src := netip.MustParseAddr("192.0.2.7")

	// the monitor: a connection from src ended after failed attempts
	if k, ok := penalty.Classify(penalty.Outcome{Attempted: true}); ok {
		t.Penalize(src, k)
	}
	// the listener, on the next connection from src
	if _, err := t.Admit(src); err != nil {
		fmt.Println(err)
	}
	// Output: penalty: connection refused: penalty: failed authentication
}
