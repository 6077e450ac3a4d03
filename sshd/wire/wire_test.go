package wire

import (
	"bytes"
	"errors"
	"math/big"
	"slices"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var b []byte
	b = AppendByte(b, MsgKexInit)
	b = AppendBool(b, true)
	b = AppendUint32(b, 0xdeadbeef)
	b = AppendUint64(b, 1<<40)
	b = AppendString(b, "hello")
	b = AppendNameList(b, []string{"a", "bc"})
	b = AppendMPInt(b, []byte{0, 0, 0x80, 1})
	b = AppendBytes(b, nil)
	r := NewReader(b)
	if r.Byte("t") != MsgKexInit || !r.Bool("b") || r.Uint32("u") != 0xdeadbeef || r.Uint64("u64") != 1<<40 {
		t.Fatal("fixed fields")
	}
	if r.String("s") != "hello" {
		t.Fatal("string")
	}
	if nl := r.NameList("nl"); len(nl) != 2 || nl[0] != "a" || nl[1] != "bc" {
		t.Fatalf("namelist %q", nl)
	}
	if m := r.MPInt("m"); m.Cmp(big.NewInt(0x8001)) != 0 {
		t.Fatalf("mpint %v", m)
	}
	if len(r.Bytes("empty")) != 0 {
		t.Fatal("empty string")
	}
	if err := r.Done(); err != nil {
		t.Fatal(err)
	}
}

func TestMPIntEncoding(t *testing.T) {
	// RFC 4251 §5 examples.
	cases := []struct {
		in   []byte
		want []byte
	}{
		{nil, []byte{0, 0, 0, 0}},
		{[]byte{0x09, 0xa3, 0x78, 0xf9, 0xb2, 0xe3, 0x32, 0xa7}, []byte{0, 0, 0, 8, 0x09, 0xa3, 0x78, 0xf9, 0xb2, 0xe3, 0x32, 0xa7}},
		{[]byte{0x80}, []byte{0, 0, 0, 2, 0, 0x80}},
		{[]byte{0, 0, 0x7f}, []byte{0, 0, 0, 1, 0x7f}},
	}
	for _, c := range cases {
		if got := AppendMPInt(nil, c.in); !bytes.Equal(got, c.want) {
			t.Errorf("AppendMPInt(%x) = %x, want %x", c.in, got, c.want)
		}
	}
}

func TestShortAndHostile(t *testing.T) {
	cases := map[string][]byte{
		"short uint32":     {0, 0, 1},
		"length past end":  {0, 0, 0, 9, 'a'},
		"huge length":      {0xff, 0xff, 0xff, 0xff, 'a'},
		"empty name":       {0, 0, 0, 3, 'a', ',', ','},
		"negative mpint":   {0, 0, 0, 1, 0x80},
		"trailing garbage": {0, 0, 0, 0, 1},
	}
	for name, b := range cases {
		r := NewReader(b)
		switch name {
		case "empty name":
			r.NameList("names")
		case "negative mpint":
			r.MPInt("x")
		case "short uint32":
			r.Uint32("n")
		default:
			r.Bytes("s")
		}
		err := r.Done()
		if err == nil {
			t.Errorf("%s: no error", name)
		}
		if name == "huge length" && !errors.Is(err, ErrShort) {
			t.Errorf("%s: %v does not wrap ErrShort", name, err)
		}
	}
	// sticky: after a failure every read returns zero values
	r := NewReader([]byte{1})
	r.Uint32("a")
	if r.Byte("b") != 0 || r.Err() == nil || r.Err().Error() != "wire: field a: wire: message too short" {
		t.Errorf("sticky error: %v", r.Err())
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 'a', ',', 'b', 0, 0, 0, 1, 0x7f})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(b)
		nl := r.NameList("nl")
		m := r.MPInt("m")
		s := r.Bytes("s")
		if r.Err() == nil {
			// re-encode what was read; it must parse back the same
			out := AppendNameList(nil, nl)
			out = AppendMPInt(out, m.Bytes())
			out = AppendBytes(out, s)
			r2 := NewReader(out)
			nl2, m2, s2 := r2.NameList("nl"), r2.MPInt("m"), r2.Bytes("s")
			if r2.Done() != nil || len(nl2) != len(nl) || m2.Cmp(m) != 0 || !bytes.Equal(s, s2) {
				t.Fatalf("round trip mismatch: %v", r2.Err())
			}
		}
	})
}

func TestBoundedReads(t *testing.T) {
	b := AppendString(nil, "four")
	if r := NewReader(b); r.StringMax("s", 4) != "four" || r.Done() != nil {
		t.Fatal("a string at its bound was refused")
	}
	if r := NewReader(b); r.StringMax("s", 3) != "" || r.Err() == nil {
		t.Fatal("a string over its bound was accepted")
	}
	if r := NewReader([]byte{2}); r.StrictBool("b") || r.Err() == nil {
		t.Fatal("boolean 2 was accepted")
	}
	if r := NewReader([]byte{1}); !r.StrictBool("b") || r.Done() != nil {
		t.Fatal("boolean 1 was refused")
	}
	c := AppendUint32(nil, 9)
	if r := NewReader(c); r.Count("n", 8) != 0 || r.Err() == nil {
		t.Fatal("a count over its bound was accepted")
	}
	if r := NewReader(c); r.Count("n", 9) != 9 || r.Done() != nil {
		t.Fatal("a count at its bound was refused")
	}
	if r := NewReader(AppendUint64(nil, 1<<63)); r.Int64("i") != -1<<63 {
		t.Fatal("Int64")
	}
}

// TestOptionalStrings: nil and empty lists stay apart through the
// encoding, values come back, and the bounds on entries and their length
// fail the read.
func TestOptionalStrings(t *testing.T) {
	for _, l := range [][]string{nil, {}, {"a", "", "ccc"}} {
		r := NewReader(AppendOptionalStrings(nil, l))
		got := r.OptionalStrings("list", 3, 3)
		if err := r.Done(); err != nil || (got == nil) != (l == nil) || !slices.Equal(got, l) {
			t.Errorf("%#v came back as %#v (%v)", l, got, err)
		}
	}
	for _, bound := range []struct{ max, maxLen int }{{2, 3}, {3, 2}} {
		r := NewReader(AppendOptionalStrings(nil, []string{"a", "", "ccc"}))
		r.OptionalStrings("list", bound.max, bound.maxLen)
		if r.Done() == nil {
			t.Errorf("3 entries up to 3 bytes read within %d entries of %d bytes", bound.max, bound.maxLen)
		}
	}
}
