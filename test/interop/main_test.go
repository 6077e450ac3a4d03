package interop_test

import (
	"os"
	"testing"

	"github.com/offload/offload/sshd/sftp"
)

// helperEnv makes this test binary the SFTP helper of the cells' servers
// (connection.Config.SFTPHelper): as root the server's sessions run as
// the throwaway user, and internal-sftp then runs in a child as that user.
const helperEnv = "OFFLOAD_INTEROP_SFTP_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(sftpHelperMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// sftpHelperMain does what "offload sftp-server" does: [--root DIR] and
// internal-sftp's flags.
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
