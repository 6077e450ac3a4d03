// Package sftp is offload's SFTP server: protocol version 3
// (draft-ietf-secsh-filexfer-02) with OpenSSH's extensions, the server
// behind "Subsystem sftp internal-sftp" and "ForceCommand internal-sftp".
//
// # Serving a session
//
// Serve answers requests on a Channel (any io.Reader and io.Writer: an SSH
// channel, a pipe, standard input and output) until it ends:
//
//	opts, err := sftp.ParseCommand("internal-sftp -R -d /srv/%u")
//	...
//	err = sftp.Serve(ch, &sftp.Config{Options: *opts, User: "alice", UID: 1001, Home: "/home/alice"})
//
// The server runs with the identity of its process: file access is
// checked by the kernel for that user. A process serving another user
// must switch identity first (the connection layer runs it in the user's
// post-auth process, or in a helper child started as the user; Main is
// that helper's body).
//
// # Flags
//
// Options carries internal-sftp's flags, as sftp-server(8) documents
// them: -R (read-only: every change answered SSH_FX_PERMISSION_DENIED),
// -p and -P (allow and deny lists of the request names Requests returns),
// -d (start directory, with %d, %u, %U, %% and ~), -u (umask for created
// files and directories, applied exactly whatever the process umask), -l
// (log level: at INFO every change is logged in sftp-server's words) and
// -f (syslog facility, handed to a FacilityHandler). A bad flag or value
// is an *ArgsError, never ignored.
//
// # Extensions
//
// VERSION announces, as OpenSSH 9: posix-rename, statvfs, fstatvfs,
// hardlink, fsync, lsetstat, limits (256 KiB packets, so OpenSSH's sftp
// and scp send 255 KiB reads and writes), expand-path, copy-data,
// home-directory and users-groups-by-id.
//
// # Confinement
//
// With Config.Root, every path is confined to that directory as a
// chroot(2) would confine it: "/" is the root, ".." stops there, symbolic
// links are resolved inside it (absolute targets from the root), and the
// resolved names are used through os.Root, so a link swapped in between
// cannot lead out either. After a real chroot, Root is left empty.
//
// # Performance
//
// Requests are answered in order in the goroutine that calls Serve. A
// READ is read straight into the outgoing buffer; with a PacketWriter
// channel, replies accumulate while more requests are Buffered and go out
// in full packets with room for the channel's headers, so a downloaded
// byte is copied once in user space.
package sftp
