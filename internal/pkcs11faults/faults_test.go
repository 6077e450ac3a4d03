package pkcs11faults

import (
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFaultInjectRejectsBadInput(t *testing.T) {
	bad := map[string]Fault{
		"no calls":        {Code: CKRDeviceRemoved},
		"unknown call":    {Calls: []string{"Sing"}, Code: CKRDeviceRemoved},
		"negative times":  {Calls: []string{"sign"}, Code: CKRDeviceRemoved, Times: -1},
		"negative delay":  {Calls: []string{"sign"}, Delay: -time.Millisecond},
		"max below delay": {Calls: []string{"sign"}, Delay: time.Second, MaxDelay: time.Millisecond},
		"delay too long":  {Calls: []string{"sign"}, Delay: time.Millisecond, MaxDelay: time.Hour},
		"does nothing":    {Calls: []string{"sign"}},
	}
	var f Injector
	for name, ft := range bad {
		if _, err := f.Inject(ft); err == nil || !strings.HasPrefix(err.Error(), "pkcs11faults: ") {
			t.Errorf("%s: Inject(%+v) = %v, want a pkcs11faults: error", name, ft, err)
		}
	}
	if f.Active() != 0 {
		t.Errorf("%d faults active after only bad input", f.Active())
	}
	var nilF *Injector
	if _, err := nilF.Inject(Fault{Calls: []string{"sign"}, Code: 1}); err == nil {
		t.Errorf("Inject on a nil injector succeeded")
	}
	nilF.Clear()
	if nilF.Remove(1) || nilF.Active() != 0 || nilF.Calls("sign") != 0 {
		t.Errorf("nil injector reports state")
	}
}

func TestFaultTimesAndGroups(t *testing.T) {
	var f Injector
	if _, err := f.Fail(CKRSessionHandleInvalid, 2, "bulk"); err != nil {
		t.Fatal(err)
	}
	if c := f.before(fnSign, 0, false); c != 0 {
		t.Errorf("Sign failed with %#x under a bulk fault", c)
	}
	for i, fn := range []int{fnEncrypt, fnDecryptInit, fnEncrypt} {
		want := CKRSessionHandleInvalid
		if i == 2 {
			want = 0 // Times ran out
		}
		if c := f.before(fn, 0, false); c != want {
			t.Errorf("call %d (%s): code %#x, want %#x", i, faultFuncs[fn], c, want)
		}
	}
	if f.Active() != 0 {
		t.Errorf("a fault whose Times ran out is still active")
	}
	if got := f.Injected("bulk"); got != 2 {
		t.Errorf("Injected(bulk) = %d, want 2", got)
	}
	if got := f.Calls("encrypt"); got != 2 {
		t.Errorf("Calls(encrypt) = %d, want 2", got)
	}
	if got := f.Calls("C_sign"); got != 1 {
		t.Errorf("Calls(C_sign) = %d, want 1", got)
	}
}

func TestFaultSlotsAndOrder(t *testing.T) {
	var f Injector
	first, _ := f.Fail(CKRDeviceRemoved, 0, "all")
	f.Remove(first)
	id, err := f.Inject(Fault{Calls: []string{"sign", "probe"}, Code: CKRDeviceRemoved, Slots: []uint{7}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fail(CKRDeviceError, 0, "Sign"); err != nil {
		t.Fatal(err)
	}
	f.opened(100, 7)
	f.opened(200, 8)
	checks := []struct {
		code uint
		got  uint
	}{
		{CKRDeviceRemoved, f.beforeSession(fnSign, 100)},
		{CKRDeviceError, f.beforeSession(fnSign, 200)}, // only the second fault matches slot 8
		{CKRDeviceRemoved, f.before(fnGetTokenInfo, 7, true)},
		{0, f.before(fnGetTokenInfo, 8, true)},
		{0, f.before(fnGetSlotList, 0, false)},
	}
	for i, c := range checks {
		if c.got != c.code {
			t.Errorf("check %d: code %#x, want %#x", i, c.got, c.code)
		}
	}
	f.closed(100)
	if c := f.beforeSession(fnSign, 100); c != CKRDeviceError {
		t.Errorf("closed session: %#x, want only the slot-less fault", c)
	}
	if !f.Remove(id) || f.Remove(id) {
		t.Errorf("Remove: want true once, then false")
	}
	f.Clear()
	if c := f.beforeSession(fnSign, 200); c != 0 || f.Active() != 0 {
		t.Errorf("after Clear: code %#x, %d active", c, f.Active())
	}
}

func TestFaultDelay(t *testing.T) {
	var f Injector
	if _, err := f.Slow(20*time.Millisecond, 40*time.Millisecond, 3, "sign"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fail(CKRDeviceMemory, 1, "Sign"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if c := f.before(fnSign, 0, false); c != CKRDeviceMemory {
		t.Errorf("delay and failure together: code %#x, want the failure", c)
	}
	for range 2 {
		if c := f.before(fnSignInit, 0, false); c != 0 {
			t.Errorf("a delay-only fault failed a call: %#x", c)
		}
	}
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("three delayed calls took %v, want at least 60ms", d)
	}
	if f.Active() != 0 || f.Injected("sign") != 3 {
		t.Errorf("after three calls: %d faults active, %d calls injected; want 0 and 3", f.Active(), f.Injected("sign"))
	}
}

// TestFaultConcurrent injects, counts and clears from many goroutines;
// run it with -race.
func TestFaultConcurrent(t *testing.T) {
	var f Injector
	if _, err := f.Fail(CKRSessionHandleInvalid, 500, "Encrypt"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				h := uint(g*1000 + i)
				f.opened(h, uint(g))
				f.beforeSession(fnEncrypt, h)
				f.closed(h)
				if i%50 == 0 {
					id, _ := f.Slow(0, time.Microsecond, 1, "Decrypt")
					f.Remove(id)
				}
			}
		}()
	}
	wg.Wait()
	if got := f.Injected("Encrypt"); got != 500 {
		t.Errorf("Injected = %d, want exactly the 500 Times of the fault", got)
	}
	if got := f.Calls("Encrypt"); got != 1600 {
		t.Errorf("Calls = %d, want 1600", got)
	}
}

func TestParse(t *testing.T) {
	ft, err := Parse("calls=sign,bulk code=CKR_DEVICE_REMOVED times=3 slot=12,13 delay=50ms max-delay=200ms")
	if err != nil {
		t.Fatal(err)
	}
	want := Fault{Calls: []string{"sign", "bulk"}, Code: CKRDeviceRemoved, Times: 3, Slots: []uint{12, 13},
		Delay: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond}
	if ft.String() != want.String() {
		t.Errorf("parsed %q, want %q", ft, want)
	}
	again, err := Parse(ft.String())
	if err != nil || again.String() != ft.String() {
		t.Errorf("round trip: %q, %v", again, err)
	}
	for _, s := range []string{"code=session_handle_invalid calls=Encrypt", "calls=all code=0xB3", "calls=decrypt code=179"} {
		if ft, err := Parse(s); err != nil || ft.Code != CKRSessionHandleInvalid {
			t.Errorf("%q: %+v, %v", s, ft, err)
		}
	}
	for _, s := range []string{"", "calls=sign", "code=CKR_DEVICE_REMOVED", "calls=sign code=CKR_NOPE",
		"calls=sign code=0x32 times=x", "calls=sign delay=fast", "calls=sign code=0x32 slot=a",
		"calls=sign code=0x32 color=red", "calls=sign calls=bulk code=0x32", "calls=sign code", "calls=sign code=0x32 times=-2"} {
		if _, err := Parse(s); err == nil || !strings.HasPrefix(err.Error(), "pkcs11faults: ") {
			t.Errorf("Parse(%q) = %v, want a pkcs11faults: error", s, err)
		}
	}
}

func TestCKRNames(t *testing.T) {
	for name, code := range ckrNames {
		if got, err := ParseCKR(name); err != nil || got != code {
			t.Errorf("ParseCKR(%s) = %#x, %v", name, got, err)
		}
		if CKRName(code) != name {
			t.Errorf("CKRName(%#x) = %s, want %s", code, CKRName(code), name)
		}
	}
	if CKRName(0x12345) != "0x12345" {
		t.Errorf("CKRName of an unknown value: %s", CKRName(0x12345))
	}
}
