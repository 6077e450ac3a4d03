//go:build cgo && !nopkcs11

package pkcs11faults

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/pkcs11"
)

// TestFaultFuncsMatchAPI: the injector knows every function the provider
// calls, by the method's name, in the order of its constants.
func TestFaultFuncsMatchAPI(t *testing.T) {
	typ := reflect.TypeFor[API]()
	var methods []string
	for i := range typ.NumMethod() {
		methods = append(methods, typ.Method(i).Name)
	}
	funcs := slices.Clone(faultFuncs[:])
	slices.Sort(funcs)
	if !slices.Equal(methods, funcs) {
		t.Errorf("API methods %v\nfaultFuncs  %v", methods, funcs)
	}
	for fn, want := range map[int]string{fnGetInfo: "GetInfo", fnOpenSession: "OpenSession", fnFindObjectsFinal: "FindObjectsFinal",
		fnDecrypt: "Decrypt", fnSign: "Sign", fnDeriveKey: "DeriveKey"} {
		if faultFuncs[fn] != want {
			t.Errorf("faultFuncs[%d] = %s, want %s", fn, faultFuncs[fn], want)
		}
	}
}

// TestCKRNamesMatchModule: the names known without cgo are miekg's.
func TestCKRNamesMatchModule(t *testing.T) {
	for name, code := range ckrNames {
		if code == 0 {
			continue
		}
		if got := miekgName(pkcs11.Error(code)); got != name && got != "" { // "": miekg has no name for it
			t.Errorf("%#x: %s here, %s in miekg/pkcs11", code, name, got)
		}
	}
}

// miekgName is the name miekg/pkcs11 gives a CKR_* value ("" for none).
func miekgName(pe pkcs11.Error) string {
	s := pe.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}
