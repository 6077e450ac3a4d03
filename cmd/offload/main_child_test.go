package main

import (
	"os"
	"testing"

	"github.com/offload/offload/sshd"
)

// TestMain lets the test binary serve as the children of the separated
// servers its tests start, as the offload binary does; with
// OFFLOAD_TEST_MAIN=1 it is offload itself (socket activation passes
// descriptors at exec, so its test runs the real command in a child).
func TestMain(m *testing.M) {
	sshd.RunChild()
	runKeeperIfAsked()
	if os.Getenv("OFFLOAD_TEST_MAIN") == "1" || os.Getenv(detachEnv) != "" { // a daemon offload sshd detached is offload too
		os.Unsetenv("OFFLOAD_TEST_MAIN")
		main()
	}
	os.Exit(m.Run())
}
