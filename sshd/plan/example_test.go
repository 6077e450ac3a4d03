package plan_test

import (
	"fmt"
	"os"

	"github.com/offload/offload/sshd/plan"
)

// The monitor encodes the plan; a child decodes it and prints what it
// will construct.
func ExamplePlan() {
	sent := &plan.Plan{Mode: "fastest",
		Preauth:  []plan.Assignment{{Primitive: "aes128-gcm", Provider: "cpu"}},
		Postauth: []plan.Assignment{{Primitive: "aes128-gcm", Provider: "pkcs11", Where: plan.InMonitor}}}
	got, err := plan.Parse(sent.Marshal())
	if err != nil {
		fmt.Println(err)
		return
	}
	got.Print(os.Stdout)
	fmt.Println(got.Remote())
	// Output:
	// # plan (format 1, policy fastest): what the pre-auth workers and post-auth processes construct
	// # plan aes128-gcm: pre-auth cpu in the child, post-auth pkcs11 in the monitor
	// map[aes128-gcm:pkcs11]
}
