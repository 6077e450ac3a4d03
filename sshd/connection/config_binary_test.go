package connection

import (
	"bytes"
	"log/slog"
	"reflect"
	"testing"
)

// notEncoded are the Config fields MarshalBinary leaves out.
var notEncoded = map[string]bool{"Logger": true, "Sessions": true, "OpenHeldPAMSession": true}

// fullConfig has every encoded field set, each to a value of its own: a
// field added to Config but not to its binary form fails
// TestConfigBinaryRoundTrip.
func fullConfig(t testing.TB) *Config {
	c := &Config{}
	v := reflect.ValueOf(c).Elem()
	for i := 0; i < v.NumField(); i++ {
		if name := v.Type().Field(i).Name; !notEncoded[name] {
			fill(t, v.Field(i), int64(i+1), name)
		}
	}
	return c
}

func fill(t testing.TB, f reflect.Value, n int64, name string) {
	switch f.Kind() {
	case reflect.String:
		f.SetString(name)
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Int, reflect.Int64:
		f.SetInt(n)
	case reflect.Uint32:
		f.SetUint(uint64(n))
	case reflect.Pointer:
		f.Set(reflect.New(f.Type().Elem()))
		fill(t, f.Elem(), n, name)
	case reflect.Struct:
		for i := 0; i < f.NumField(); i++ {
			fill(t, f.Field(i), n+int64(i), f.Type().Field(i).Name)
		}
	case reflect.Slice:
		f.Set(reflect.MakeSlice(f.Type(), 2, 2))
		fill(t, f.Index(0), n, name)
	case reflect.Map:
		f.Set(reflect.ValueOf(map[string]string{"sftp": "internal-sftp -R", "a": name}))
	default:
		t.Fatalf("no test value for %s (%s)", name, f.Kind())
	}
}

func configRoundTrip(t *testing.T, c *Config) {
	t.Helper()
	b, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Config
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, c) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, *c)
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

func TestConfigBinaryRoundTrip(t *testing.T) {
	configRoundTrip(t, fullConfig(t))
	configRoundTrip(t, &Config{})
	// Empty is not nil: no subsystems, no forwarding targets.
	configRoundTrip(t, &Config{Subsystems: map[string]string{}, PermitOpen: []string{}, ChannelTimeouts: []ChannelTimeout{},
		Account: &Account{Name: "alice", Groups: []uint32{}}})
}

// TestConfigBinaryKeepsLocalFields: what is not encoded stays the
// receiver's.
func TestConfigBinaryKeepsLocalFields(t *testing.T) {
	b, _ := (&Config{ForceCommand: "x"}).MarshalBinary()
	log := slog.Default()
	c := &Config{Logger: log, NoTTY: true}
	if err := c.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if c.Logger != log || c.NoTTY || c.ForceCommand != "x" {
		t.Fatalf("decoded %+v", c)
	}
}

func TestConfigBinaryRefuses(t *testing.T) {
	b, _ := (&Config{Subsystems: map[string]string{"b": "1", "a": "2"}}).MarshalBinary()
	var c Config
	if err := c.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	// Swap the two entries: out of order is refused.
	sorted := []byte("\x00\x00\x00\x01a\x00\x00\x00\x012\x00\x00\x00\x01b\x00\x00\x00\x011")
	i := bytes.Index(b, sorted)
	if i < 0 {
		t.Fatal("no sorted subsystems in the encoding")
	}
	copy(b[i:], "\x00\x00\x00\x01b\x00\x00\x00\x011\x00\x00\x00\x01a\x00\x00\x00\x012")
	if c.UnmarshalBinary(b) == nil {
		t.Fatal("subsystems out of order were accepted")
	}
	b, _ = (&Config{ForceCommand: string(make([]byte, maxSettingsField+1))}).MarshalBinary()
	if c.UnmarshalBinary(b) == nil {
		t.Fatal("an over-long string was accepted")
	}
}

// FuzzConfigBinary: the decoder never panics, and what it accepts
// encodes back to the same bytes.
func FuzzConfigBinary(f *testing.F) {
	for _, c := range []*Config{fullConfig(f), {}, {Subsystems: map[string]string{}, PermitOpen: []string{}}} {
		b, _ := c.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Config
		if c.UnmarshalBinary(b) != nil {
			return
		}
		again, _ := c.MarshalBinary()
		if !bytes.Equal(again, b) {
			t.Fatalf("accepted %x but it encodes as %x", b, again)
		}
	})
}
