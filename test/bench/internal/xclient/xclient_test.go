package xclient

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseNeedsTheConnection(t *testing.T) {
	o, err := parse([]string{"-addr", "127.0.0.1:22", "-user", "u", "-key", "/k", "-hostkey", "/h.pub",
		"-op", "pipe-upload", "-src", "/p", "-size", "64"})
	if err != nil || o.addr != "127.0.0.1:22" || o.size != 64 || o.op != "pipe-upload" {
		t.Fatalf("parse: %+v, %v", o, err)
	}
	for _, bad := range [][]string{{}, {"-addr", "a:1", "-key", "k", "-hostkey", "h", "-src", "s"}, {"-nope"}} {
		if _, err := parse(bad); err == nil || !strings.HasPrefix(err.Error(), "xclient: ") {
			t.Errorf("parse(%q): %v", bad, err)
		}
	}
}

func TestMainFailsWithoutKey(t *testing.T) {
	var out bytes.Buffer
	err := Main([]string{"-addr", "127.0.0.1:1", "-key", "/nonexistent", "-hostkey", "/h", "-op", "pipe-upload",
		"-src", "/p", "-size", "1"}, &out)
	if err == nil || out.Len() != 0 {
		t.Errorf("Main without a key: %v, %q", err, out.String())
	}
}
