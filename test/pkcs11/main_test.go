//go:build cgo && !nopkcs11

// Package pkcs11_test holds integration tests of the PKCS #11 provider
// against real SoftHSM tokens: a crypto/tls server whose key lives in a
// token, reached through the registry; a token shared over p11-kit's
// remoting, as a fleet shares one HSM; and a token removed and created
// again under a running process.
package pkcs11_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/internal/testenv"
)

func TestMain(m *testing.M) {
	if missing := softhsmtest.Missing(); missing != "" {
		if testenv.Required() {
			fmt.Fprintf(os.Stderr, "FAIL: %s is missing and %s=1 requires it\n", missing, testenv.RequireEnv)
			os.Exit(1)
		}
		fmt.Printf("skipping test/pkcs11: %s is missing; set %s=1 to make this a failure\n", missing, testenv.RequireEnv)
		os.Exit(0)
	}
	code := m.Run()
	stopTPM()
	os.Exit(code)
}
