package sftp

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzSFTPServer runs the SFTP server on arbitrary client input: framing,
// every request decoder and the replies. The server is confined to a
// temp dir (Config.Root); as the fuzzer runs as root in CI, requests that
// would name paths outside the temp dir without that confinement
// (absolute or parent paths, symbolic and hard links) also have their
// type rewritten to one the server does not know before they are served,
// in case the confinement had a bug: what is parsed is still fuzzed.
func FuzzSFTPServer(f *testing.F) {
	for _, seed := range [][][]byte{
		{sftpInit, sftpReq(fxpRealpath, 1, "."), sftpReq(fxpStat, 2, "x")},
		{sftpInit, sftpReq(fxpOpen, 1, "f", uint32(0x1a), rawField{0, 0, 0, 4, 0, 0, 1, 0xa4}),
			sftpReq(fxpWrite, 2, "1", uint64(0), "hello"), sftpReq(fxpRead, 3, "1", uint64(0), 100),
			sftpReq(fxpFsetstat, 4, "1", rawField{0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8}), sftpReq(fxpClose, 5, "1")},
		{sftpInit, sftpReq(fxpMkdir, 1, "d", rawField{0, 0, 0, 0}), sftpReq(fxpOpendir, 2, "d"),
			sftpReq(fxpReaddir, 3, "1"), sftpReq(fxpRename, 4, "d", "e"), sftpReq(fxpRmdir, 5, "e")},
		{sftpInit, sftpReq(fxpExtended, 1, "limits@openssh.com"), sftpReq(fxpExtended, 2, "statvfs@openssh.com", ".")},
		{sftpInit, {0, 0, 0, 0}},
		{sftpInit, {0xff, 0xff, 0xff, 0xff, fxpRead}},
	} {
		f.Add(bytes.Join(seed, nil))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fio := &fakeChannel{in: bytes.NewReader(sandboxSFTP(in)), size: 32768}
		s, err := NewServer(fio, &Config{Root: t.TempDir(), Home: "/"})
		if err != nil {
			t.Fatal(err)
		}
		s.Serve()
		checkSFTPReplies(t, fio.out.Bytes())
		for p := range sftpFrames(in) {
			(&reader{b: p}).attrs() // the attribute decoder, on every body
		}
	})
}

// checkSFTPReplies fails unless out is whole, well-sized SFTP packets.
func checkSFTPReplies(t *testing.T, out []byte) {
	for len(out) > 0 {
		if len(out) < 5 {
			t.Fatalf("reply stream ends in a %d-byte fragment", len(out))
		}
		n := binary.BigEndian.Uint32(out)
		if n == 0 || n > maxPacket || int(n) > len(out)-4 {
			t.Fatalf("reply of length %d in %d bytes", n, len(out))
		}
		out = out[4+n:]
	}
}

// sftpFrames yields the bodies of the well-framed packets at the start of
// in, as the server would cut them.
func sftpFrames(in []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(in) >= 4 {
			n := binary.BigEndian.Uint32(in)
			if n == 0 || n > maxPacket || int(n) > len(in)-4 {
				return
			}
			if !yield(in[4 : 4+n]) {
				return
			}
			in = in[4+n:]
		}
	}
}

// sandboxSFTP returns a copy of in with every request that could reach
// outside the home directory turned into an unknown request type. Input
// past the first badly framed packet is left as it is: the server stops
// there (bad length) or takes it all as one packet that never completes.
func sandboxSFTP(in []byte) []byte {
	out := bytes.Clone(in)
	off := 0
	for p := range sftpFrames(in) {
		if !sftpSafe(p) {
			out[off+4] = 0xfe
		}
		off += 4 + len(p)
	}
	return out
}

// sftpSafe reports whether serving p stays inside the home directory.
func sftpSafe(p []byte) bool {
	in := reader{b: p[1:]}
	in.u32() // id
	switch p[0] {
	case fxpInit, fxpClose, fxpRead, fxpWrite, fxpFstat, fxpFsetstat, fxpReaddir:
		return true // no path, or a handle
	case fxpOpen, fxpOpendir, fxpRemove, fxpMkdir, fxpRmdir, fxpSetstat,
		fxpRealpath, fxpStat, fxpLstat, fxpReadlink:
		return safeSFTPPath(in.str())
	case fxpRename:
		return safeSFTPPath(in.str()) && safeSFTPPath(in.str())
	case fxpExtended:
		return safeSFTPExtension(&in)
	}
	return p[0] != fxpSymlink
}

func safeSFTPExtension(in *reader) bool {
	switch in.str() {
	case "limits@openssh.com", "fsync@openssh.com":
		return true
	case "statvfs@openssh.com", "expand-path@openssh.com":
		return safeSFTPPath(in.str())
	case "posix-rename@openssh.com":
		return safeSFTPPath(in.str()) && safeSFTPPath(in.str())
	}
	return false // hardlink and anything new
}

// safeSFTPPath accepts names in the home directory itself: letters,
// digits, '-', '_' and '.', but not "..".
func safeSFTPPath(p string) bool {
	if p == ".." {
		return false
	}
	for _, c := range []byte(p) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}
