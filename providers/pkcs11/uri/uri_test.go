package uri

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestParseExamples(t *testing.T) {
	// The examples of RFC 7512 section 3 and a few of offload's own.
	good := []string{
		"pkcs11:",
		"pkcs11:object=my-pubkey;type=public",
		"pkcs11:object=my-key;type=private?pin-source=file:/etc/token",
		"pkcs11:token=The%20Software%20PKCS%2311%20Softtoken;manufacturer=Snake%20Oil,%20Inc.;model=1.0;object=my-certificate;type=cert;id=%69%95%3E%5C%F4%BD%EC%91;serial=?pin-source=file:/etc/token_pin",
		"pkcs11:object=my-sign-key;type=private?module-name=mypkcs11",
		"pkcs11:object=my-sign-key;type=private?module-path=/mnt/libmypkcs11.so.1",
		"pkcs11:token=Software%20PKCS%2311%20softtoken;manufacturer=Snake%20Oil,%20Inc.?pin-value=the-pin",
		"pkcs11:slot-description=Sun%20Metaslot",
		"pkcs11:library-manufacturer=Snake%20Oil,%20Inc.;library-description=Soft%20Token%20Library;library-version=1.23",
		"pkcs11:token=My%20token%25%20created%20by%20Joe;library-version=3;id=%01%02%03%Ba%dd%Ca%fe%04%05%06",
		"pkcs11:token=A%20name%20with%20a%20substring%20%25%3B;object=my-certificate;type=cert",
		"pkcs11:token=Name%20with%20a%20small%20A%20with%20acute:%20%C3%A1;object=my-certificate;type=cert",
		"pkcs11:token=my-token;object=my-certificate;type=cert;vendor-aaa=value-a?pin-source=file:/etc/token_pin&vendor-bbb=value-b",
		"pkcs11:token=unit0;slot-id=3?max-sessions=8&failover-token=unit1",
		"pkcs11:token=unit0?peer-token=unit1,unit%2C2",
	}
	for _, s := range good {
		u, err := Parse(s)
		if strings.Contains(s, "vendor-aaa") {
			// RFC 7512's own example uses unprefixed vendor attributes;
			// offload requires the "x-" prefix and says so.
			if err == nil || !strings.Contains(err.Error(), "vendor-aaa") {
				t.Errorf("Parse(%q) = %v, want an error naming vendor-aaa", s, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
			continue
		}
		// Printing and parsing again gives the same URI.
		again, err := Parse(u.Full())
		if err != nil {
			t.Errorf("Parse(Full(%q) = %q): %v", s, u.Full(), err)
			continue
		}
		if again.Full() != u.Full() {
			t.Errorf("round trip of %q: %q then %q", s, u.Full(), again.Full())
		}
	}
	u := MustParse("pkcs11:token=My%20token%25%20created%20by%20Joe;library-version=3;id=%01%02%03%Ba%dd%Ca%fe%04%05%06")
	if u.Token != "My token% created by Joe" || !bytes.Equal(u.ID, []byte{1, 2, 3, 0xba, 0xdd, 0xca, 0xfe, 4, 5, 6}) || u.LibraryVersion != "3" {
		t.Errorf("decoded %+v", u)
	}
	u = MustParse("pkcs11:token=unit0;slot-id=3?max-sessions=8&failover-token=unit1&x-color=blue")
	if *u.SlotID != 3 || u.MaxSessions != 8 || u.FailoverToken != "unit1" || len(u.Vendor) != 1 {
		t.Errorf("decoded %+v", u)
	}
	if !strings.Contains(u.String(), "x-color=blue") {
		t.Errorf("vendor attribute lost: %s", u)
	}
}

// TestPeerTokens: peer-token is a comma-separated list of labels, a
// comma within a label percent-encoded, printed back the same.
func TestPeerTokens(t *testing.T) {
	u := MustParse("pkcs11:token=unit0?peer-token=unit1,unit%2C2")
	if len(u.PeerTokens) != 2 || u.PeerTokens[0] != "unit1" || u.PeerTokens[1] != "unit,2" {
		t.Fatalf("PeerTokens %q", u.PeerTokens)
	}
	if got := u.String(); got != "pkcs11:token=unit0?peer-token=unit1,unit%2C2" {
		t.Errorf("printed %s", got)
	}
	c := u.Clone()
	c.PeerTokens[0] = "x"
	if u.PeerTokens[0] != "unit1" {
		t.Error("Clone shares PeerTokens")
	}
	for _, bad := range []string{"pkcs11:?peer-token=", "pkcs11:?peer-token=a,,b", "pkcs11:?peer-token=a&peer-token=b", "pkcs11:?peer-token=%zz"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestParseErrors(t *testing.T) {
	bad := map[string]string{
		"pkcs12:token=a":                       `must start with "pkcs11:"`,
		"token=a":                              `must start with "pkcs11:"`,
		"pkcs11:token=a;token=b":               "given twice",
		"pkcs11:token":                         `"name=value"`,
		"pkcs11:=a":                            `"name=value"`,
		"pkcs11:id=%zz":                        "percent-encoding",
		"pkcs11:id=%4":                         "percent-encoding",
		"pkcs11:type=secret":                   "type must be",
		"pkcs11:slot-id=-1":                    "slot-id",
		"pkcs11:slot-id=abc":                   "slot-id",
		"pkcs11:library-version=1.x":           "library-version",
		"pkcs11:object=a/b":                    "percent-encoded",
		"pkcs11:object=a b":                    "percent-encoded",
		"pkcs11:object=a#frag":                 "fragment",
		"pkcs11:colour=red":                    `unknown path attribute "colour"`,
		"pkcs11:?colour=red":                   `unknown query attribute "colour"`,
		"pkcs11:?pin-value=1&pin-value=2":      "given twice",
		"pkcs11:?pin-value=1&pin-source=/x":    "one way",
		"pkcs11:?module-path=/a&module-name=b": "name one module",
		"pkcs11:?module-name=/usr/lib/x.so":    "bare name",
		"pkcs11:?max-sessions=0":               "max-sessions",
		"pkcs11:?max-sessions=many":            "max-sessions",
		"pkcs11:?module-path=":                 "empty",
	}
	for s, want := range bad {
		_, err := Parse(s)
		var ue *Error
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want a *uri.Error containing %q", s, err, want)
		}
	}
}

func TestPINRedacted(t *testing.T) {
	const secret = "s3cret-PIN"
	u := MustParse("pkcs11:token=a?pin-value=" + secret)
	if strings.Contains(u.String(), secret) || !strings.Contains(u.Full(), secret) {
		t.Errorf("String %q must hide and Full %q must keep the PIN", u.String(), u.Full())
	}
	_, err := Parse("pkcs11:token=a;token=b?pin-value=" + secret)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("error %v shows the PIN", err)
	}
	_, err = Parse("pkcs11:token=a?pin-value=" + secret + "&bogus=1")
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("error %v shows the PIN", err)
	}
	if r := Redact("pkcs11:?PIN-VALUE=" + secret); strings.Contains(r, secret) {
		t.Errorf("Redact kept the PIN: %s", r)
	}
}

func TestMatchesToken(t *testing.T) {
	d := TokenInfo{LibraryManufacturer: "SoftHSM", LibraryVersion: "2.6", SlotID: 7, Label: "unit0",
		Manufacturer: "SoftHSM project", Model: "SoftHSM v2", Serial: "abc"}
	yes := []string{"pkcs11:", "pkcs11:token=unit0", "pkcs11:serial=abc;token=unit0", "pkcs11:slot-id=7",
		"pkcs11:library-version=2", "pkcs11:library-version=2.6", "pkcs11:model=SoftHSM%20v2;object=x"}
	no := []string{"pkcs11:token=unit1", "pkcs11:serial=abd", "pkcs11:slot-id=8", "pkcs11:library-version=3",
		"pkcs11:library-version=2.5", "pkcs11:manufacturer=x"}
	for _, s := range yes {
		if !MustParse(s).MatchesToken(d) {
			t.Errorf("%s should match", s)
		}
	}
	for _, s := range no {
		if MustParse(s).MatchesToken(d) {
			t.Errorf("%s should not match", s)
		}
	}
	if got := d.URI().String(); got != "pkcs11:manufacturer=SoftHSM%20project;model=SoftHSM%20v2;serial=abc;token=unit0" {
		t.Errorf("TokenInfo.URI() = %s", got)
	}
}

func TestPrintEscapes(t *testing.T) {
	u := &URI{Token: "a;b/c?d%e f", Object: "x&y", ID: []byte{0, 255}, ModulePath: "/usr/lib/a b.so", PINSource: "/p&q"}
	s := u.String()
	want := "pkcs11:token=a%3Bb%2Fc%3Fd%25e%20f;object=x&y;id=%00%ff?module-path=/usr/lib/a%20b.so&pin-source=/p%26q"
	if s != want {
		t.Errorf("String() = %s\nwant       %s", s, want)
	}
	back := MustParse(s)
	if back.Token != u.Token || back.Object != u.Object || !bytes.Equal(back.ID, u.ID) || back.PINSource != u.PINSource {
		t.Errorf("round trip: %+v", back)
	}
	if (&URI{ID: []byte{}}).String() != "pkcs11:id=" {
		t.Errorf("empty id must print as id=")
	}
}

// FuzzParse checks that Parse never panics, that what it accepts prints
// to a URI it accepts again with the same meaning, and that errors never
// carry a pin-value.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"pkcs11:", "pkcs11:token=a;object=b;id=%01?pin-value=x&module-name=y",
		"pkcs11:slot-id=1;type=cert?max-sessions=3", "pkcs11:x-a=%41?x-b=c&failover-token=d", "pkcs11:id=%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := Parse(s)
		if err != nil {
			if strings.Contains(s, "pin-value=SECRETPIN") && strings.Contains(err.Error(), "SECRETPIN") {
				t.Fatalf("error shows the pin-value: %v", err)
			}
			return
		}
		printed := u.Full()
		v, err := Parse(printed)
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its print %q fails: %v", s, printed, err)
		}
		if v.Full() != printed {
			t.Fatalf("print not stable: %q -> %q -> %q", s, printed, v.Full())
		}
	})
}
