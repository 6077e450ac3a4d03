package lanetest_test

import (
	"fmt"
	"time"

	"github.com/offload/offload/internal/lanetest"
	"github.com/offload/offload/provider"
)

// A registry whose AES-GCM takes a millisecond a call over four lanes,
// and a seal made to fail.
func Example() {
	lp := &lanetest.Provider{Lanes: 4, Delay: time.Millisecond}
	reg, err := lp.Registry()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Close()
	a, _ := reg.AEAD("aes128-gcm", make([]byte, 16))
	defer provider.Release(a)
	lp.FailSeal(2)
	_, err1 := provider.Seal(a, nil, make([]byte, 12), []byte("one"), nil)
	_, err2 := provider.Seal(a, nil, make([]byte, 12), []byte("two"), nil)
	fmt.Println(provider.Lanes(a), err1, err2)
	// Output: 4 <nil> lanetest: device removed
}
