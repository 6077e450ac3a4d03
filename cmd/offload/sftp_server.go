package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/offload/offload/sshd/sftp"
)

// cmdSFTPServer serves one SFTP session on stdin and stdout as
// sftp-server(8) does, with its flags; "--root DIR" first confines it to
// DIR. The connection layer runs it as the user when it cannot serve
// internal-sftp in process (connection.Config.SFTPHelper).
func cmdSFTPServer(_ context.Context, args []string, _, stderr io.Writer) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stderr, "usage: offload sftp-server [--root DIR] [-ehR] [-d start_directory] [-f log_facility] [-l log_level]\n"+
			"                           [-P denied_requests] [-p allowed_requests] [-u umask]\n"+
			"serves one SFTP session on stdin/stdout, with the flags of sftp-server(8); --root DIR confines it to DIR")
		return flag.ErrHelp
	}
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
