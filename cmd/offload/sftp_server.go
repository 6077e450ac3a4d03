package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/offload/offload/sshd/sftp"
)

// cmdSFTPServer serves one SFTP session on stdin and stdout as
// sftp-server(8) does, with its flags; "--root DIR" first confines it to
// DIR. The connection layer runs it as the user when it cannot serve
// internal-sftp in process (connection.Config.SFTPHelper).
func cmdSFTPServer(_ context.Context, args []string, _, stderr io.Writer) error {
	root := ""
	if len(args) >= 2 && args[0] == "--root" {
		root, args = args[1], args[2:]
	}
	if err := sftp.Main(args, root, os.Stdin, os.Stdout, stderr); err != nil {
		var ae *sftp.ArgsError
		if errors.As(err, &ae) {
			return usageError{ae.Error()}
		}
		return err
	}
	return nil
}
