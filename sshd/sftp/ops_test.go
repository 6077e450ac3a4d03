package sftp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	sftp "github.com/pkg/sftp"
)

// TestSFTPOperations drives every request type of the in-process
// server through pkg/sftp's client.
func TestSFTPOperations(t *testing.T) {
	sc := newClient(t, nil)
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	f, err := sc.Create(p("a"))
	must(err)
	_, err = f.Write([]byte("hello, world"))
	must(err)
	must(f.Sync()) // fsync@openssh.com
	st, err := f.Stat()
	must(err)
	if st.Size() != 12 || !st.Mode().IsRegular() {
		t.Errorf("fstat: size %d mode %v", st.Size(), st.Mode())
	}
	must(f.Close())

	must(sc.Truncate(p("a"), 5))
	mt := time.Unix(1_600_000_000, 0)
	must(sc.Chtimes(p("a"), mt, mt))
	st, err = sc.Stat(p("a"))
	must(err)
	if st.Size() != 5 || !st.ModTime().Equal(mt) {
		t.Errorf("after truncate and chtimes: size %d mtime %v", st.Size(), st.ModTime())
	}

	must(sc.Symlink("a", p("link")))
	if target, err := sc.ReadLink(p("link")); err != nil || target != "a" {
		t.Errorf("readlink: %q %v", target, err)
	}
	if st, err := sc.Lstat(p("link")); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("lstat of a symlink: %v %v", st, err)
	}
	must(sc.Link(p("a"), p("hard")))
	must(sc.PosixRename(p("hard"), p("hard2")))
	if err := sc.Rename(p("hard2"), p("a")); err == nil {
		t.Errorf("RENAME onto an existing file succeeded")
	}
	if _, err := sc.StatVFS(dir); err != nil {
		t.Errorf("statvfs: %v", err)
	}
	if _, err := sc.Open(p("missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("open of a missing file: %v, want not exist", err)
	}
	if err := sc.Remove(dir); err == nil {
		t.Errorf("REMOVE removed a directory")
	}
	must(os.Mkdir(p("sub"), 0o755))
	must(os.Symlink("sub", p("sublink")))
	for in, want := range map[string]string{
		dir + "/./sub/..":      dir,
		dir + "/sublink/x":     p("sub/x"), // a missing last component is kept
		dir + "//sublink/../a": p("a"),
	} {
		if rp, err := sc.RealPath(in); err != nil || rp != want {
			t.Errorf("realpath %s: %q %v, want %s", in, rp, err, want)
		}
	}
	if rp, err := realpath(hostFS{}, dir+"/missing/.."); err == nil {
		t.Errorf("realpath through a missing directory: %q", rp)
	}
	// Through the protocol too: REALPATH resolves each ".." after the
	// component before it, as sftp-server does ("far/.." is the parent
	// of far's target, not dir; "missing/.." does not exist).
	elsewhere := t.TempDir()
	must(os.Mkdir(filepath.Join(elsewhere, "inner"), 0o755))
	must(os.Symlink(filepath.Join(elsewhere, "inner"), p("far")))
	if rp, err := sc.RealPath(dir + "/far/.."); err != nil || rp != elsewhere {
		t.Errorf("REALPATH far/..: %q %v, want %s", rp, err, elsewhere)
	}
	if rp, err := sc.RealPath(dir + "/missing/../a"); err == nil {
		t.Errorf("REALPATH through a missing directory: %q", rp)
	}
	if wd, err := sc.Getwd(); err != nil || !filepath.IsAbs(wd) {
		t.Errorf("getwd: %q %v", wd, err)
	}
}

func TestSFTPAppendAndReaddir(t *testing.T) {
	sc := newClient(t, nil)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "log"), []byte("one\n"), 0o600)
	f, err := sc.OpenFile(filepath.Join(dir, "log"), os.O_WRONLY|os.O_APPEND)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("two\n"))
	f.Close()
	if got, _ := os.ReadFile(filepath.Join(dir, "log")); string(got) != "one\ntwo\n" {
		t.Errorf("append: %q", got)
	}
	var want []string
	for i := range 250 { // more than one NAME reply
		name := fmt.Sprintf("f%03d", i)
		os.WriteFile(filepath.Join(dir, name), nil, 0o600)
		want = append(want, name)
	}
	want = append(want, "log")
	infos, err := sc.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, fi := range infos {
		got = append(got, fi.Name())
	}
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("readdir: %d names, want %d", len(got), len(want))
	}
	if _, err := sc.ReadDir(filepath.Join(dir, "log")); err == nil {
		t.Errorf("OPENDIR of a file succeeded")
	}
}

// TestSFTPBigReads reads with requests larger than the server answers.
func TestSFTPBigReads(t *testing.T) {
	sc := newClient(t, nil)
	path := filepath.Join(t.TempDir(), "big")
	data := bytes.Repeat([]byte("0123456789abcdef"), 100_000)
	os.WriteFile(path, data, 0o600)
	f, err := sc.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	n, err := f.ReadAt(buf, 3)
	if err != nil || !bytes.Equal(buf[:n], data[3:3+n]) {
		t.Fatalf("ReadAt: %d bytes, %v", n, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("ReadAll: %d bytes, %v", len(back), err)
	}
}

// TestSFTPClientPipeline checks that replies held for batching are
// flushed when the server waits for input: a client with one request
// in flight at a time must not stall.
func TestSFTPClientPipeline(t *testing.T) {
	sc := newClient(t, nil, sftp.MaxConcurrentRequestsPerFile(1))
	path := filepath.Join(t.TempDir(), "f")
	os.WriteFile(path, make([]byte, 200_000), 0o600)
	for range 20 {
		if _, err := sc.Stat(path); err != nil {
			t.Fatal(err)
		}
	}
	f, err := sc.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, f)
	f.Close()
	if err != nil || n != 200_000 {
		t.Fatalf("copy: %d %v", n, err)
	}
}
