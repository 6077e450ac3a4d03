package main

import (
	"os"
	"testing"

	"github.com/offload/offload/sshd"
)

// TestMain lets the test binary serve as the children of the separated
// servers its tests start, as the offload binary does.
func TestMain(m *testing.M) {
	sshd.RunChild()
	os.Exit(m.Run())
}
