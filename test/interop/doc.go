// Package interop runs offload's SSH server against the SSH clients people
// use: the OpenSSH client (ssh, scp, sftp), PuTTY (plink, pscp, psftp),
// paramiko, asyncssh, curl (libssh2, sftp:// and scp://), node's ssh2,
// rclone's sftp backend, lftp, git and rsync over ssh, and
// golang.org/x/crypto/ssh in process.
//
// # The matrix
//
// Every client meets a server in each cell: the server's defaults, then
// one server per cipher (with each MAC for the ciphers that need one), per
// key exchange and per host-key algorithm (file keys and keys in a SoftHSM
// token), each offering only that algorithm on its axis and everything
// offload supports on the others, so the client must negotiate exactly it;
// a server that re-keys every 256 KiB; a client that re-keys by itself
// where it can; and an RSA user key. In each cell the client runs what it
// has of: a remote command, an upload (compared by SHA-256 with what was
// sent), and SFTP put and get; a key exchange or host-key cell, which
// changes only the handshake, runs the client's first transfer only. A
// cell where the server's log shows the client offered nothing in common
// is "n/a" (except on defaults, where it is a failure). Rekey cells check
// in the server's log that a key re-exchange happened and which side
// started it.
//
// Cells that fail for a known reason are marked in known_test.go by a reason
// string the failure must contain; a marked cell that passes fails the
// test, so the mark goes when the fix lands.
//
// # Running
//
//	go test ./test/interop                              the matrix
//	go test ./test/interop -run TestMatrix -args -write-table   also rewrite docs/interop.md
//	go test ./test/interop -run 'TestMatrix/paramiko/'  one client
//
// The clients come from Debian packages (openssh-client, putty-tools,
// python3-paramiko, python3-asyncssh, curl, rclone, lftp, git, rsync,
// nodejs, npm) and npm (ssh2, installed by scripts/test.sh under
// $OFFLOAD_NPM_DIR, default ~/.cache/offload/npm). A missing client skips
// its part, or fails it when OFFLOAD_REQUIRE_TOOLS=1. As root, the
// sessions run as a throwaway user with /bin/sh as its shell, which the
// test creates and removes.
package interop
