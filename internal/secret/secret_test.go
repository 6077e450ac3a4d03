package secret

import (
	"strings"
	"testing"
)

func TestWipeString(t *testing.T) {
	b := []byte("hunter22")
	s := string(b) // a copy, as a parser makes it
	WipeString(s)
	if s != strings.Repeat("\x00", 8) {
		t.Fatalf("not wiped: %q", s)
	}
	if string(b) != "hunter22" {
		t.Fatal("wiped the source too")
	}
	one := string([]byte{'x'})
	WipeString(one) // shared by the runtime: left alone
	if one != "x" || string([]byte{'x'}) != "x" {
		t.Fatal("a one-byte string was wiped")
	}
	buf := []byte("secret")
	Wipe(buf)
	if string(buf) != "\x00\x00\x00\x00\x00\x00" {
		t.Fatalf("%q", buf)
	}
}
