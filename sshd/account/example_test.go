package account_test

import (
	"fmt"
	"net/netip"

	"github.com/offload/offload/sshd/account"
)

// The decisions OpenSSH makes before any authentication method runs.
func ExamplePolicy_Allowed() {
	p := &account.Policy{
		UsePAM:    true, // lock and expiry are PAM's account stack's
		DenyUsers: []string{"guest", "*@192.0.2.0/24"},
		Groups:    func(*account.Account) ([]string, error) { return []string{"users"}, nil },
	}
	a := &account.Account{Name: "alice", Shell: "/bin/sh"}
	for _, ip := range []string{"198.51.100.7", "192.0.2.7"} {
		_, err := p.Allowed(a, account.Source{Addr: netip.MustParseAddr(ip)})
		fmt.Println(ip, err)
	}
	// Output:
	// 198.51.100.7 <nil>
	// 192.0.2.7 account: User alice from 192.0.2.7 not allowed because listed in DenyUsers
}
