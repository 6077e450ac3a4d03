package krl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/wire"
)

type kit struct {
	t   *testing.T
	gen string
	dir string
}

func (k *kit) run(args ...string) string {
	k.t.Helper()
	out, err := exec.Command(k.gen, args...).CombinedOutput()
	if err != nil {
		k.t.Fatalf("ssh-keygen %q: %v\n%s", args, err, out)
	}
	return string(out)
}

func (k *kit) key(name string) string {
	p := filepath.Join(k.dir, name)
	k.run("-q", "-t", "ed25519", "-N", "", "-C", name, "-f", p)
	return p
}

func (k *kit) cert(ca, name, id string, serial uint64) string {
	p := k.key(name)
	k.run("-q", "-s", ca, "-I", id, "-z", fmt.Sprint(serial), "-n", "alice", p+".pub")
	return p + "-cert.pub"
}

func (k *kit) pub(path string) ssh.PublicKey {
	b, err := os.ReadFile(path)
	if err != nil {
		k.t.Fatal(err)
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		k.t.Fatal(err)
	}
	return key
}

// queried is ssh-keygen -Q's answer: is the key revoked by the KRL?
func (k *kit) queried(krl, key string) bool {
	out, err := exec.Command(k.gen, "-Q", "-f", krl, key).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "REVOKED") {
		if _, ok := err.(*exec.ExitError); !ok {
			k.t.Fatal(err)
		}
	}
	return strings.Contains(string(out), "REVOKED")
}

// Every kind of entry ssh-keygen -k writes, checked against ssh-keygen -Q.
func TestAgainstSSHKeygen(t *testing.T) {
	k := &kit{t: t, gen: testenv.LookPath(t, "ssh-keygen", "Debian package openssh-client"), dir: t.TempDir()}
	ca, ca2 := k.key("ca"), k.key("ca2")
	plainRevoked, plainSHA1, plainSHA256, plainOK := k.key("u1"), k.key("u2"), k.key("u3"), k.key("u4")
	certs := map[string]string{
		"serial5":    k.cert(ca, "c5", "ok-id", 5),
		"serial6":    k.cert(ca, "c6", "ok-id", 6),
		"range15":    k.cert(ca, "c15", "ok-id", 15),
		"range21":    k.cert(ca, "c21", "ok-id", 21),
		"bitmap1004": k.cert(ca, "c1004", "ok-id", 1004),
		"bitmap1005": k.cert(ca, "c1005", "ok-id", 1005),
		"keyid":      k.cert(ca, "cid", "badguy", 77),
		"zero":       k.cert(ca, "c0", "ok-id", 0),
		"otherCA5":   k.cert(ca2, "o5", "ok-id", 5),
		"anyCAid":    k.cert(ca2, "oid", "everywhere", 78),
	}
	var spec strings.Builder
	spec.WriteString("serial: 5\nserial: 10-20\nid: badguy\n")
	for s := 1000; s <= 1200; s += 2 { // dense: ssh-keygen writes a bitmap
		fmt.Fprintf(&spec, "serial: %d\n", s)
	}
	specFile := filepath.Join(k.dir, "spec")
	os.WriteFile(specFile, []byte(spec.String()), 0o600)
	keys := filepath.Join(k.dir, "keys")
	pub := func(p string) string { b, _ := os.ReadFile(p + ".pub"); return string(b) }
	os.WriteFile(keys, []byte("key: "+pub(plainRevoked)+"sha1: "+pub(plainSHA1)+"sha256: "+pub(plainSHA256)), 0o600)

	krlFile := filepath.Join(k.dir, "krl")
	k.run("-k", "-f", krlFile, "-s", ca+".pub", specFile)
	k.run("-k", "-u", "-f", krlFile, keys)
	// ssh-keygen cannot write a section for any CA; append one (key ID
	// "everywhere"), which ssh-keygen -Q reads as well
	b, _ := os.ReadFile(krlFile)
	anyCA := wire.AppendString(wire.AppendString(nil, ""), "")
	anyCA = wire.AppendBytes(append(anyCA, certKeyID), wire.AppendString(nil, "everywhere"))
	b = section(b, sectionCertificates, anyCA)
	os.WriteFile(krlFile, b, 0o600)
	krl, err := Parse(b)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(krl.certs) < 2 || len(krl.keys) != 1 || len(krl.sha1s) != 1 || len(krl.sha256s) != 1 {
		t.Fatalf("sections: %d cert, %d keys, %d sha1, %d sha256", len(krl.certs), len(krl.keys), len(krl.sha1s), len(krl.sha256s))
	}
	sawBitmap := false
	for _, cs := range krl.certs {
		sawBitmap = sawBitmap || len(cs.bitmaps) > 0
	}
	if !sawBitmap {
		t.Error("ssh-keygen wrote no bitmap section for dense serials; the bitmap code went untested")
	}
	check := func(name, path string) {
		want := k.queried(krlFile, path)
		if got := krl.Revoked(k.pub(path)); got != want {
			t.Errorf("%s: Revoked %v, ssh-keygen -Q %v", name, got, want)
		}
	}
	for _, p := range []string{plainRevoked, plainSHA1, plainSHA256, plainOK} {
		check(filepath.Base(p), p+".pub")
	}
	revoked := map[string]bool{"serial5": true, "range15": true, "bitmap1004": true, "keyid": true, "anyCAid": true}
	for name, p := range certs {
		check(name, p)
		if got := krl.Revoked(k.pub(p)); got != revoked[name] {
			t.Errorf("%s: Revoked %v, want %v", name, got, revoked[name])
		}
	}
	// a certificate whose key is revoked is revoked; one by a revoked CA too
	cu1 := filepath.Join(k.dir, "u1.pub")
	k.run("-q", "-s", ca2, "-I", "x", "-z", "900", cu1)
	check("cert of a revoked key", filepath.Join(k.dir, "u1-cert.pub"))
	krlCA := filepath.Join(k.dir, "krl-ca")
	os.WriteFile(keys, []byte("key: "+pub(ca2)), 0o600)
	k.run("-k", "-f", krlCA, keys)
	b, _ = os.ReadFile(krlCA)
	krl2, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !krl2.Revoked(k.pub(certs["otherCA5"])) || krl2.Revoked(k.pub(certs["serial5"])) || !k.queried(krlCA, certs["otherCA5"]) {
		t.Error("revoked CA")
	}
}

// header builds a KRL header.
func header() []byte {
	b := append([]byte(nil), Magic...)
	b = wire.AppendUint32(b, 1)
	b = wire.AppendUint64(b, 1)
	b = wire.AppendUint64(b, 0)
	b = wire.AppendUint64(b, 0)
	b = wire.AppendString(b, "")
	return wire.AppendString(b, "comment")
}

func section(b []byte, typ byte, data []byte) []byte {
	return wire.AppendBytes(append(b, typ), data)
}

func TestMalformed(t *testing.T) {
	certSect := func(sub byte, data []byte) []byte {
		s := wire.AppendString(wire.AppendString(nil, ""), "")
		return wire.AppendBytes(append(s, sub), data)
	}
	ext := func(crit bool) []byte {
		return wire.AppendString(wire.AppendBool(wire.AppendString(nil, "x@example.com"), crit), "")
	}
	for name, b := range map[string][]byte{
		"bad magic":         []byte("SSHKRL\n\x01"),
		"short header":      header()[:20],
		"version 2":         append(append([]byte(nil), Magic...), 0, 0, 0, 2),
		"unknown section":   section(header(), 9, nil),
		"empty key section": section(header(), sectionExplicitKey, nil),
		"bad key":           section(header(), sectionExplicitKey, wire.AppendString(nil, "junk")),
		"sha1 length":       section(header(), sectionSHA1, wire.AppendString(nil, "short")),
		"critical ext":      section(header(), sectionExtension, ext(true)),
		"serial 0":          section(header(), sectionCertificates, certSect(certSerialList, wire.AppendUint64(nil, 0))),
		"inverted range":    section(header(), sectionCertificates, certSect(certSerialRange, wire.AppendUint64(wire.AppendUint64(nil, 9), 3))),
		"range trailing":    section(header(), sectionCertificates, certSect(certSerialRange, make([]byte, 17))),
		"cert critical ext": section(header(), sectionCertificates, certSect(certExtension, ext(true))),
		"section too long":  append(header(), sectionSHA256, 0xff, 0, 0, 0),
	} {
		if _, err := Parse(b); err == nil {
			t.Errorf("%s: parsed", name)
		} else if fe := (*FormatError)(nil); !errors.As(err, &fe) {
			t.Errorf("%s: %v is not a FormatError", name, err)
		}
	}
	if _, err := Parse(section(header(), sectionExtension, ext(false))); err != nil {
		t.Errorf("non-critical extension: %v", err)
	}
	signed := wire.AppendString(section(header(), sectionSignature, []byte("key")), "sig")
	if _, err := Parse(signed); !errors.Is(err, ErrSigned) {
		t.Errorf("signed KRL: %v", err)
	}
	if k, err := Parse(header()); err != nil || k.Comment != "comment" || k.Version != 1 {
		t.Errorf("empty KRL: %+v, %v", k, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(header())
	f.Add(section(header(), sectionSHA256, wire.AppendBytes(nil, bytes.Repeat([]byte{1}, 32))))
	s := wire.AppendString(wire.AppendString(nil, ""), "")
	s = wire.AppendBytes(append(s, certSerialBitmap), wire.AppendBytes(wire.AppendUint64(nil, 100), []byte{0x05}))
	f.Add(section(header(), sectionCertificates, s))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := Parse(b)
		if err != nil {
			return
		}
		for _, cs := range k.certs {
			for _, r := range cs.serials {
				if r.lo == 0 || r.lo > r.hi {
					t.Fatalf("bad range kept: %+v", r)
				}
			}
		}
	})
}
