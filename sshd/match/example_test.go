package match_test

import (
	"fmt"
	"net/netip"

	"github.com/offload/offload/sshd/match"
)

func Example() {
	addr := netip.MustParseAddr("192.0.2.7")
	fmt.Println(match.Glob("LC_ALL", "LC_*"))
	fmt.Println(match.List("www.example.com", "*.EXAMPLE.com,!mail.*", true) == match.Matched)
	fmt.Println(match.Addrs(addr, "192.0.2.0/24,!192.0.2.7") == match.Negated)
	fmt.Println(match.CIDRs(addr, "192.0.2.0/24") == match.Matched)
	fmt.Println(match.User("alice", "", addr, "a*@192.0.2.0/24"))
	fmt.Println(match.ValidUser("alice@192.0.2.1/24"))
	// Output:
	// true
	// true
	// true
	// true
	// true
	// false
}
