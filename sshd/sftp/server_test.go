package sftp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// fakeChannel feeds requests from a buffer and records what is sent,
// as a PacketWriter with a channel's header room.
type fakeChannel struct {
	in    *bytes.Reader
	out   bytes.Buffer
	sends []int
	size  int // packet size
}

const fakeHeadroom = 9

func (f *fakeChannel) Read(p []byte) (int, error) {
	if f.in == nil {
		return 0, io.EOF
	}
	return f.in.Read(p)
}
func (f *fakeChannel) Write(p []byte) (int, error) {
	return 0, errors.New("plain write on a packet writer")
}
func (f *fakeChannel) Buffered() bool  { return f.in != nil && f.in.Len() > 0 }
func (f *fakeChannel) PacketSize() int { return f.size }
func (f *fakeChannel) Headroom() int   { return fakeHeadroom }

func (f *fakeChannel) WritePackets(buf []byte, off, n int) error {
	if off < fakeHeadroom {
		return errors.New("no header room")
	}
	f.sends = append(f.sends, n)
	f.out.Write(buf[off : off+n])
	return nil
}

// sftpReq frames one request: type, then the fields (uint32, uint64,
// string or []byte as an SFTP string, raw bytes as rawField).
type rawField []byte

func sftpReq(t byte, fields ...any) []byte {
	b := []byte{0, 0, 0, 0, t}
	for _, f := range fields {
		switch v := f.(type) {
		case uint32:
			b = binary.BigEndian.AppendUint32(b, v)
		case int:
			b = binary.BigEndian.AppendUint32(b, uint32(v))
		case uint64:
			b = binary.BigEndian.AppendUint64(b, v)
		case string:
			b = appendString(b, v)
		case rawField:
			b = append(b, v...)
		}
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

var sftpInit = sftpReq(fxpInit, 3)

// runSFTP serves the concatenated requests and returns the replies
// (type byte onwards) and the error serve returned.
func runSFTP(t *testing.T, chunk int, reqs ...[]byte) ([][]byte, *fakeChannel, error) {
	t.Helper()
	return runConfig(t, &Config{Home: t.TempDir()}, chunk, reqs...)
}

// runConfig is runSFTP with a configuration.
func runConfig(t *testing.T, cfg *Config, chunk int, reqs ...[]byte) ([][]byte, *fakeChannel, error) {
	t.Helper()
	f := &fakeChannel{in: bytes.NewReader(bytes.Join(reqs, nil)), size: chunk}
	err := Serve(f, cfg)
	var out [][]byte
	b := f.out.Bytes()
	for len(b) >= 4 {
		n := int(binary.BigEndian.Uint32(b))
		if 4+n > len(b) {
			t.Fatalf("truncated reply")
		}
		out = append(out, b[4:4+n])
		b = b[4+n:]
	}
	return out, f, err
}

// replyStatus returns a STATUS reply's id and code.
func replyStatus(t *testing.T, p []byte) (uint32, uint32) {
	t.Helper()
	if p[0] != fxpStatus || len(p) < 9 {
		t.Fatalf("reply type %d, want STATUS", p[0])
	}
	return binary.BigEndian.Uint32(p[1:]), binary.BigEndian.Uint32(p[5:])
}

func TestSFTPFraming(t *testing.T) {
	for name, in := range map[string][]byte{
		"zero length":   {0, 0, 0, 0},
		"too long":      binary.BigEndian.AppendUint32(nil, maxPacket+1),
		"huge":          {0xff, 0xff, 0xff, 0xff},
		"not INIT":      sftpReq(fxpOpen, 1, "x", 1, 0),
		"no request id": sftpReq(fxpStat, rawField{1, 2}),
		"cut short":     sftpReq(fxpStat, 1, "abc")[:8],
	} {
		reqs := [][]byte{sftpInit, in}
		if name == "not INIT" {
			reqs = reqs[1:]
		}
		if _, _, err := runSFTP(t, 0, reqs...); err == nil {
			t.Errorf("%s: serve returned nil", name)
		}
	}
	if _, _, err := runSFTP(t, 0, sftpInit); err != nil {
		t.Errorf("clean EOF: %v", err)
	}
}

func TestSFTPMalformedRequests(t *testing.T) {
	reqs := [][]byte{sftpInit}
	for i, r := range []struct {
		t      byte
		fields []any
	}{
		{fxpOpen, []any{"x"}},
		{fxpRead, []any{"1", uint64(0)}},
		{fxpWrite, []any{"1", uint64(0), rawField{0, 0, 0, 9, 1}}},
		{fxpSetstat, []any{"x", attrSize}},
		{fxpMkdir, []any{"d", attrExtended, 5, "a"}},
		{fxpRename, []any{"a"}},
		{fxpExtended, []any{"posix-rename@openssh.com", "a"}},
		{fxpExtended, []any{rawField{0, 0, 1}}},
		{fxpReaddir, nil},
	} {
		reqs = append(reqs, sftpReq(r.t, append([]any{uint32(i + 1)}, r.fields...)...))
	}
	out, _, err := runSFTP(t, 0, reqs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(reqs) {
		t.Fatalf("%d replies to %d requests", len(out), len(reqs))
	}
	for i, p := range out[1:] {
		if id, code := replyStatus(t, p); id != uint32(i+1) || code != fxBadMessage {
			t.Errorf("request %d: reply id %d code %d, want BAD_MESSAGE", i+1, id, code)
		}
	}
}

func TestSFTPUnknownAndBadHandles(t *testing.T) {
	out, _, err := runSFTP(t, 0, sftpInit,
		sftpReq(99, 1),
		sftpReq(fxpExtended, 2, "nope@example.com"),
		sftpReq(fxpRead, 3, "7", uint64(0), 10),
		sftpReq(fxpWrite, 4, "7", uint64(0), "x"),
		sftpReq(fxpClose, 5, "7"),
		sftpReq(fxpFstat, 6, "7"),
		sftpReq(fxpReaddir, 7, "7"))
	if err != nil {
		t.Fatal(err)
	}
	want := []uint32{fxOpUnsupported, fxOpUnsupported, fxFailure, fxFailure, fxFailure, fxFailure, fxFailure}
	for i, p := range out[1:] {
		if _, code := replyStatus(t, p); code != want[i] {
			t.Errorf("request %d: code %d, want %d", i+1, code, want[i])
		}
	}
}

func TestSFTPHandleLimit(t *testing.T) {
	dir := t.TempDir()
	reqs := [][]byte{sftpInit}
	for i := range maxHandles + 2 {
		reqs = append(reqs, sftpReq(fxpOpendir, uint32(i), dir))
	}
	out, _, err := runSFTP(t, 0, reqs...)
	if err != nil {
		t.Fatal(err)
	}
	if last := out[len(out)-1]; last[0] != fxpStatus {
		t.Errorf("handle %d granted", maxHandles+1)
	}
	if first := out[1]; first[0] != fxpHandle {
		t.Errorf("first OPENDIR: reply type %d", first[0])
	}
}

func TestSFTPVersionAndLimits(t *testing.T) {
	out, _, err := runSFTP(t, 0, sftpInit, sftpReq(fxpExtended, 1, "limits@openssh.com"))
	if err != nil {
		t.Fatal(err)
	}
	if v := out[0]; v[0] != fxpVersion || binary.BigEndian.Uint32(v[1:]) != 3 || !bytes.Contains(v, []byte("limits@openssh.com")) {
		t.Errorf("VERSION reply %q", v)
	}
	l := out[1]
	if l[0] != fxpExtendedReply || len(l) != 5+32 {
		t.Fatalf("limits reply %x", l)
	}
	if r := binary.BigEndian.Uint64(l[13:]); r != maxRead {
		t.Errorf("max read %d", r)
	}
}

// sftpReadFile serves READs of path, one per offset, with n bytes each.
func sftpReadFile(t *testing.T, chunk int, path string, n uint32, offs ...uint64) ([][]byte, *fakeChannel) {
	t.Helper()
	reqs := [][]byte{sftpInit, sftpReq(fxpOpen, 1, path, fxfRead, 0)}
	for i, off := range offs {
		reqs = append(reqs, sftpReq(fxpRead, uint32(10+i), "1", off, n))
	}
	out, f, err := runSFTP(t, chunk, reqs...)
	if err != nil {
		t.Fatal(err)
	}
	return out[2:], f
}

func TestSFTPReadsAndPacking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	data := make([]byte, 1<<20+5)
	for i := range data {
		data[i] = byte(i * 7)
	}
	os.WriteFile(path, data, 0o600)
	offs := []uint64{0, maxRead, 1 << 20, 1<<20 + 5, 1 << 62, 1 << 63}
	out, f := sftpReadFile(t, 32768, path, 1<<20, offs...)
	for i, want := range [][]byte{data[:maxRead], data[maxRead : 2*maxRead], data[1<<20:]} {
		p := out[i]
		if p[0] != fxpData || !bytes.Equal(p[9:], want) || binary.BigEndian.Uint32(p[5:]) != uint32(len(want)) {
			t.Errorf("read %d: type %d, %d bytes", i, p[0], len(p)-9)
		}
	}
	for _, p := range out[3:] {
		if _, code := replyStatus(t, p); code != fxEOF {
			t.Errorf("read past the end: code %d", code)
		}
	}
	// While requests wait, replies go out in whole 32 KiB packets.
	for i, n := range f.sends[:len(f.sends)-1] {
		if n%32768 != 0 {
			t.Errorf("send %d of %d: %d bytes, not whole packets", i, len(f.sends), n)
		}
	}
}

// TestSFTPTransferAllocs: READ and WRITE in steady state allocate
// nothing.
func TestSFTPTransferAllocs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	os.WriteFile(path, make([]byte, 1<<20), 0o600)
	f := &fakeChannel{size: 32768}
	s, _ := NewServer(f, nil)
	fh, _ := os.OpenFile(path, os.O_RDWR, 0)
	defer fh.Close()
	s.handles["1"] = &handle{f: fh}
	s.inited = true
	for name, req := range map[string][]byte{
		"READ":  sftpReq(fxpRead, 5, "1", uint64(4096), 32768)[4:],
		"WRITE": sftpReq(fxpWrite, 6, "1", uint64(4096), string(make([]byte, 32768)))[4:],
	} {
		allocs := testing.AllocsPerRun(200, func() {
			if err := s.handle(req); err != nil {
				t.Fatal(err)
			}
			s.out.settle()
			f.out.Reset()
			f.sends = f.sends[:0]
		})
		if allocs != 0 {
			t.Errorf("%v allocations per %s", allocs, name)
		}
	}
}

func TestSFTPWritesAndBigRequests(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w")
	big := bytes.Repeat([]byte{'z'}, maxRead)
	reqs := [][]byte{sftpInit, sftpReq(fxpOpen, 1, path, fxfWrite|fxfCreat|fxfTrunc, attrPermissions, 0o600)}
	for i := range 3 {
		reqs = append(reqs, sftpReq(fxpWrite, uint32(2+i), "1", uint64(i*maxRead), string(big)))
	}
	reqs = append(reqs, sftpReq(fxpClose, 9, "1"))
	out, _, err := runSFTP(t, 32768, reqs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range out[2:] {
		if _, code := replyStatus(t, p); code != fxOK {
			t.Errorf("code %d", code)
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() != 3*maxRead || st.Mode().Perm() != 0o600 {
		t.Errorf("written file: %v %v", st, err)
	}
}

func TestSFTPModeString(t *testing.T) {
	for m, want := range map[uint32]string{
		sIFREG | 0o644:  "-rw-r--r--",
		sIFDIR | 0o1777: "drwxrwxrwt",
		sIFREG | 0o4644: "-rwSr--r--",
		sIFLNK | 0o777:  "lrwxrwxrwx",
		sIFREG | 0o2755: "-rwxr-sr-x",
	} {
		if got := modeString(m); got != want {
			t.Errorf("modeString(%o) = %s, want %s", m, got, want)
		}
	}
	if m := unixMode(os.ModeDir | 0o755); m != sIFDIR|0o755 {
		t.Errorf("unixMode(dir) = %o", m)
	}
}

// TestSFTPFsetstatRenamed sets times through a handle whose file was
// renamed since it was opened: the open file changes, not its old name.
func TestSFTPFsetstatRenamed(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("x"), 0o600)
	f := &fakeChannel{}
	s, _ := NewServer(f, &Config{Home: dir})
	s.inited = true
	for _, req := range [][]byte{
		sftpReq(fxpOpen, 1, "a", fxfRead|fxfWrite, 0),
		sftpReq(fxpFsetstat, 2, "1", attrACModTime|attrPermissions, 0o640, 1_000_000, 1_500_000_000),
	} {
		if req[4] == fxpFsetstat {
			os.Rename(a, b)
		}
		if err := s.handle(req[4:]); err != nil {
			t.Fatal(err)
		}
	}
	s.out.flush(true)
	st, err := os.Stat(b)
	if err != nil || st.ModTime().Unix() != 1_500_000_000 || st.Mode().Perm() != 0o640 {
		t.Errorf("renamed file after FSETSTAT: %v %v", st, err)
	}
	s.closeAll()
}
