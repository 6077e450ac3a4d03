package perm

import (
	"bytes"
	"reflect"
	"testing"
)

// full has every field set: a field added to Permissions but not to
// fields fails TestBinaryRoundTrip.
func full() *Permissions {
	p := &Permissions{}
	v := reflect.ValueOf(p).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(v.Type().Field(i).Name)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"a=1", ""}))
		default:
			panic("perm: no test value for " + v.Type().Field(i).Name)
		}
	}
	return p
}

func roundTrip(t *testing.T, p *Permissions) {
	t.Helper()
	b, _ := p.MarshalBinary()
	var got Permissions
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, p) {
		t.Fatalf("decoded %+v, want %+v", got, *p)
	}
	for n := 0; n < len(b); n++ {
		if got.UnmarshalBinary(b[:n]) == nil {
			t.Fatalf("cut to %d of %d bytes was accepted", n, len(b))
		}
	}
	if got.UnmarshalBinary(append(b, 0)) == nil {
		t.Fatal("a trailing byte was accepted")
	}
}

func TestBinaryRoundTrip(t *testing.T) {
	roundTrip(t, full())
	roundTrip(t, &Permissions{User: "alice", Method: "password"})
	// Empty is not nil: an empty PermitOpen permits nothing.
	roundTrip(t, &Permissions{User: "bob", PermitOpen: []string{}, PermitListen: []string{}})
}

func TestBinaryBounds(t *testing.T) {
	b, _ := (&Permissions{ForceCommand: string(make([]byte, maxField+1))}).MarshalBinary()
	var p Permissions
	if p.UnmarshalBinary(b) == nil {
		t.Fatal("an over-long string was accepted")
	}
	b, _ = (&Permissions{}).MarshalBinary()
	b[len(b)-1] = 2
	if p.UnmarshalBinary(b) == nil {
		t.Fatal("boolean 2 was accepted")
	}
}

// FuzzPermissionsBinary: the decoder never panics, and what it accepts
// encodes back to the same bytes.
func FuzzPermissionsBinary(f *testing.F) {
	for _, p := range []*Permissions{full(), {User: "u", PermitOpen: []string{}}} {
		b, _ := p.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Permissions
		if p.UnmarshalBinary(b) != nil {
			return
		}
		again, _ := p.MarshalBinary()
		if !bytes.Equal(again, b) {
			t.Fatalf("accepted %x but it encodes as %x", b, again)
		}
	})
}
