package connection_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/offload/offload/sshd/connection"
)

// sftpBatch runs an sftp batch (commands prefixed with "-" so that all
// run) against f in a fresh copy of a directory tree and returns the
// output with the directory written as DIR, and the tree's root.
func sftpBatch(t *testing.T, f *fixture, setup func(dir string), cmds ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	setup(dir)
	batch := strings.ReplaceAll(strings.Join(cmds, "\n"), "DIR", dir) + "\n"
	out, _ := f.tool(t, "sftp", batch, "-b", "-", f.user+"@127.0.0.1")
	out = dfNumbers.ReplaceAllString(out, "(df numbers)")
	return strings.ReplaceAll(out, dir, "DIR"), dir
}

// dfNumbers is df's line of figures, which change from run to run.
var dfNumbers = regexp.MustCompile(`(?m)^[ 0-9]+%$`)

// sftpTree is the tree the sftp-perm batches work on.
func sftpTree(dir string) {
	os.WriteFile(filepath.Join(dir, "f"), []byte("file\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "local"), []byte("local\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	os.Symlink("f", filepath.Join(dir, "link"))
}

// treeState describes a tree for comparing what two servers did to it.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + fi.Mode().String() + "\n")
		return nil
	})
	return b.String()
}

// sftpCommands exercises one request of each kind.
var sftpCommands = []string{
	"-put DIR/local DIR/new", "-mkdir DIR/nd", "-rm DIR/f", "-rename DIR/link DIR/moved", "-chmod 600 DIR/f",
	"-ln -s DIR/f DIR/sl", "-ln DIR/f DIR/hl", "-cp DIR/f DIR/copy", "-rmdir DIR/d", "-get DIR/f DIR/got", "-ls DIR/d", "-df DIR",
}

// TestSFTPPermLikeOpenSSH ports OpenSSH's sftp-perm regress test: with
// -R, -P and -p, the same sftp batch gives the same output and leaves
// the same files on offload as on OpenSSH's internal-sftp.
func TestSFTPPermLikeOpenSSH(t *testing.T) {
	for _, flags := range []string{
		"-R",
		"-P write",
		"-P remove,rmdir",
		"-P mkdir,rename,posix-rename",
		"-P setstat,fsetstat",
		"-P symlink,hardlink",
		"-P copy-data",
		"-P opendir",
		"-P statvfs",
		"-p realpath,stat,lstat,fstat,open,read,close,opendir,readdir",
		"-p realpath,stat,lstat,fstat,open,close,write,mkdir",
	} {
		t.Run(flags, func(t *testing.T) {
			sub := map[string]string{"sftp": "internal-sftp " + flags}
			f := newFixture(t, &connection.Config{Subsystems: sub})
			ref := f.reference(t, "Subsystem sftp internal-sftp "+flags)
			got, gotDir := sftpBatch(t, f, sftpTree, sftpCommands...)
			want, wantDir := sftpBatch(t, ref, sftpTree, sftpCommands...)
			if got != want {
				t.Errorf("sftp output differs from OpenSSH's\noffload:\n%s\nOpenSSH:\n%s", got, want)
			}
			if g, w := treeState(t, gotDir), treeState(t, wantDir); g != w {
				t.Errorf("files differ from OpenSSH's\noffload:\n%s\nOpenSSH:\n%s", g, w)
			}
		})
	}
}

// TestSFTPStartDirAndUmaskLikeOpenSSH: -d with tokens and -u give the
// same working directory and file modes as OpenSSH's internal-sftp.
func TestSFTPStartDirAndUmaskLikeOpenSSH(t *testing.T) {
	base := t.TempDir()
	os.MkdirAll(filepath.Join(base, "pub", "x"), 0o755)
	flags := "-d " + base + "/pub/x -u 027"
	f := newFixture(t, &connection.Config{Subsystems: map[string]string{"sftp": "internal-sftp " + flags}})
	ref := f.reference(t, "Subsystem sftp internal-sftp "+flags)
	for _, srv := range []*fixture{f, ref} {
		out, dir := sftpBatch(t, srv, sftpTree, "pwd", "put DIR/local new", "mkdir nd")
		if !strings.Contains(out, "Remote working directory: "+base+"/pub/x") {
			t.Errorf("port %s: pwd: %s", srv.port, out)
		}
		_ = dir
		for name, want := range map[string]os.FileMode{"new": 0o640, "nd": 0o750 | os.ModeDir} {
			p := filepath.Join(base, "pub", "x", name)
			fi, err := os.Stat(p)
			if err != nil || fi.Mode() != want {
				t.Errorf("port %s: %s mode %v %v, want %v", srv.port, name, fi.Mode(), err, want)
			}
			os.RemoveAll(p)
		}
	}
}

// TestSFTPLogging: -l INFO logs every change in sftp-server's words with
// -f's facility.
func TestSFTPLogging(t *testing.T) {
	f := newFixture(t, &connection.Config{Subsystems: map[string]string{"sftp": "internal-sftp -l INFO -f LOCAL5"}})
	out, _ := sftpBatch(t, f, sftpTree, "put DIR/local DIR/new", "mkdir DIR/nd")
	logs := f.logs.String()
	for _, want := range []string{`open \"`, `flags WRITE,CREATE,TRUNCATE`, `mkdir name \"`, "facility=LOCAL5", "session opened for local user"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q (sftp output %s)", want, out)
		}
	}
}

// TestSFTPBadFlags: a bad internal-sftp flag refuses the subsystem with
// a log line; nothing is served with the flag ignored.
func TestSFTPBadFlags(t *testing.T) {
	f := newFixture(t, &connection.Config{Subsystems: map[string]string{"sftp": "internal-sftp -u 999"}})
	out, err := f.tool(t, "sftp", "ls\n", "-b", "-", f.user+"@127.0.0.1")
	if err == nil {
		t.Errorf("sftp with a bad -u worked: %s", out)
	}
	if !strings.Contains(f.logs.String(), "umask must be octal") {
		t.Errorf("no log of the bad flag")
	}
}
