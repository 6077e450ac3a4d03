package transport_test

import (
	"os"
	"testing"

	"github.com/offload/offload/sshd"
)

// TestMain lets this test binary serve as the children of the separated
// servers its tests start.
func TestMain(m *testing.M) {
	sshd.RunChild()
	os.Exit(m.Run())
}
