package pkcs11faults_test

import (
	"fmt"

	"github.com/offload/offload/internal/pkcs11faults"
)

func Example() {
	var f pkcs11faults.Injector
	ft, err := pkcs11faults.Parse("calls=sign code=CKR_DEVICE_REMOVED times=3")
	if err != nil {
		panic(err)
	}
	id, _ := f.Inject(ft)
	fmt.Println(ft, f.Active())
	f.Remove(id)
	fmt.Println(f.Active())
	// Output:
	// calls=sign code=CKR_DEVICE_REMOVED times=3 1
	// 0
}
