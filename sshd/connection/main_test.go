package connection

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "sftp-server" {
		if err := SFTPServerMain(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("OFFLOAD_TEST_LOGIN_SHELL") == "" {
		shellOverride = "/bin/sh"
	}
	os.Exit(m.Run())
}
