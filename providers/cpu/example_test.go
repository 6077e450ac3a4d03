package cpu_test

import (
	"fmt"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
)

// The provider offers only what the CPU accelerates. Detect reads the
// CPU this runs on; here the features are given, as tests do.
func ExampleNew() {
	p := cpu.New(cpu.Features{Arch: "amd64", AES: true, CLMUL: true})
	for _, c := range p.Capabilities() {
		fmt.Println(c.Algorithm, c.Ops, c.Flags)
	}
	// Output:
	// aes128-gcm seal,open hardware,constant-time
	// aes256-gcm seal,open hardware,constant-time
	// aes128-ctr encrypt hardware,constant-time
	// aes256-ctr encrypt hardware,constant-time
	// aes192-ctr encrypt hardware,constant-time
	// aes128 encrypt hardware,constant-time
	// aes192 encrypt hardware,constant-time
	// aes256 encrypt hardware,constant-time
}

// Mask ignores features, as OFFLOAD_CPU_MASK does, to see how offload
// behaves on a CPU without them: without AES the provider offers no AES,
// and a registry serves it from software.
func ExampleMask() {
	f, err := cpu.Mask(cpu.Features{Arch: "amd64", AES: true, CLMUL: true}, "aes")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.List(), provider.Supports(cpu.New(f), "aes128-gcm", 0))
	// Output: [pclmulqdq] false
}
