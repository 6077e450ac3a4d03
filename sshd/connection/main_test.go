package connection

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv("OFFLOAD_TEST_LOGIN_SHELL") == "" {
		shellOverride = "/bin/sh"
	}
	os.Exit(m.Run())
}
