package proctree_test

import (
	"fmt"

	"github.com/offload/offload/internal/proctree"
)

// A server (100) with a connection process (101) running a session
// program (102): the tree's CPU time is the server's, its reaped
// children's and its live descendants'.
func Example() {
	t := proctree.Table{}
	for _, line := range []string{
		"100 (offload) S 1 100 100 0 -1 0 0 0 0 0 40 10 30 20 20 0 1 0 1 1 1",
		"101 (sshd-user) S 100 100 100 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 1 1 1",
		"102 (cat) R 101 100 100 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 1 1",
	} {
		s, err := proctree.ParseStat([]byte(line))
		if err != nil {
			fmt.Println(err)
			return
		}
		t[s.PID] = s
	}
	n, _ := t.TreeTicks(100)
	fmt.Println(t.Descendants(100), float64(n)/proctree.ClockTicks, "s")
	// Output: [101 102] 1.2 s
}
