package provider_test

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/software"
)

// aesCPU is a CPU with AES and carry-less multiplication, so that the
// examples print the same on every machine.
var aesCPU = cpu.Features{Arch: "amd64", AES: true, CLMUL: true}

// A registry with the CPU and software providers hands out an AEAD from
// the best of them, and says which one serves it.
func Example() {
	reg := provider.New(provider.Config{})
	defer reg.Close()
	reg.Register(cpu.New(aesCPU))
	reg.Register(software.New())

	aead, err := reg.AEAD("aes128-gcm", make([]byte, 16))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer provider.Release(aead)
	ct := aead.Seal(nil, make([]byte, 12), []byte("packet"), nil)
	pt, err := aead.Open(nil, make([]byte, 12), ct, nil)
	fmt.Println(string(pt), err)
	pv, _ := provider.ProvenanceOf(aead)
	fmt.Println(pv)
	// Output:
	// packet <nil>
	// aes128-gcm by cpu (cpu)
}

// Explain says which provider would serve an algorithm, why, and what else
// was considered.
func ExampleRegistry_Explain() {
	reg := provider.New(provider.Config{})
	defer reg.Close()
	reg.Register(cpu.New(aesCPU))
	reg.Register(software.New())

	ex, _ := reg.Explain("aes128-gcm")
	fmt.Println(ex.Chosen, "-", ex.Reason)
	for _, c := range ex.Candidates {
		fmt.Println(" ", c.Provider, c.Kind, c.Flags)
	}
	// Output:
	// cpu - no calibration: ranked by kind (cpu, software, hardware)
	//   cpu cpu hardware,constant-time
	//   software software
}

// Pins choose a provider per algorithm (like libmap.conf); deny entries
// take an algorithm, a provider, or one algorithm of one provider away
// (like cryptoadm disable). A policy that contradicts itself is refused,
// naming the entry.
func ExampleRegistry_SetPolicy() {
	reg := provider.New(provider.Config{})
	defer reg.Close()
	reg.Register(cpu.New(aesCPU))
	reg.Register(software.New())

	pins, _ := provider.ParsePins("aes128-gcm=software")
	deny, _ := provider.ParseDenyList("aes256-gcm=cpu aes128-ctr")
	if err := reg.SetPolicy(provider.Policy{Pins: pins, Deny: deny}); err != nil {
		fmt.Println(err)
	}
	for _, alg := range []string{"aes128-gcm", "aes256-gcm", "aes128-ctr"} {
		if ex, err := reg.Explain(alg); err != nil {
			fmt.Println(err)
		} else {
			fmt.Println(alg, "->", ex.Chosen, "-", ex.Reason)
		}
	}

	deny, _ = provider.ParseDenyList("software")
	fmt.Println(reg.SetPolicy(provider.Policy{Pins: pins, Deny: deny}))
	// Output:
	// aes128-gcm -> software - pinned to "software"
	// aes256-gcm -> software - only eligible provider
	// provider: no provider for aes128-ctr: every candidate is excluded (cpu: denied by "aes128-ctr"; software: denied by "aes128-ctr")
	// provider: bad policy entry "aes128-gcm=software": is also denied by "software"; remove one of the two
}

// A FanOut serves one key over several AEADs — a session each on a
// token's units — so that independent messages proceed at once. It
// builds a lane only when every lane it has is busy.
func ExampleNewFanOut() {
	key := make([]byte, 16)
	lane := func() (cipher.AEAD, error) {
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		return cipher.NewGCM(block)
	}
	first, _ := lane()
	f, err := provider.NewFanOut([]cipher.AEAD{first}, 4, lane)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	ct := f.Seal(nil, make([]byte, 12), []byte("packet"), nil)
	pt, err := f.Open(nil, make([]byte, 12), ct, nil)
	fmt.Println(string(pt), err, provider.Lanes(f), f.Active())
	// Output: packet <nil> 4 1
}
