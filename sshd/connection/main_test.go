package connection

import (
	"os"
	"testing"

	"github.com/offload/offload/sshd/sftp"
)

// helperEnv makes this test binary an SFTP helper (see testHelper).
const helperEnv = "OFFLOAD_TEST_SFTP_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(sftpHelperMain(os.Args[1:]))
	}
	if os.Getenv("OFFLOAD_TEST_LOGIN_SHELL") == "" {
		shellOverride = "/bin/sh"
	}
	os.Exit(m.Run())
}

// sftpHelperMain is what "offload sftp-server" does: [--root DIR] flags.
func sftpHelperMain(args []string) int {
	root := ""
	if len(args) >= 2 && args[0] == "--root" {
		root, args = args[1], args[2:]
	}
	if err := sftp.Main(args, root, os.Stdin, os.Stdout, os.Stderr); err != nil {
		os.Stderr.WriteString("sftp helper: " + err.Error() + "\n")
		return 1
	}
	return 0
}

// testHelper is Config.SFTPHelper running this test binary at path.
func testHelper(path string) []string {
	return []string{"/usr/bin/env", helperEnv + "=1", path}
}
