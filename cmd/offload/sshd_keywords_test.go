package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/config"
	"github.com/offload/offload/sshd/penalty"
)

// settingsDump renders what the server and the daemon take from a
// configuration, field by field, for comparison: sshd.Config (with its
// auth and connection Configs) as serverConfig builds it, and daemonView.
func settingsDump(t *testing.T, c *config.Config, log *slog.Logger) string {
	t.Helper()
	sc, err := buildServerConfig(c, nil, nil, log)
	if err != nil {
		t.Fatalf("serverConfig: %v", err)
	}
	var b strings.Builder
	dumpValue(&b, "server", reflect.ValueOf(sc))
	dumpValue(&b, "daemon", reflect.ValueOf(daemonViewOf(c)))
	if sc2, err := serverConfig(c, nil, nil, log); err == nil && sc2.PerConnection != nil {
		// The hook is a function: dump what it answers for a probe.
		cs, err := sc2.PerConnection(sshd.ConnInfo{User: "alice",
			Remote: netip.MustParseAddrPort("192.0.2.1:5555"), Local: netip.MustParseAddrPort("127.0.0.1:22")})
		dumpValue(&b, "perconnection", reflect.ValueOf(cs))
		fmt.Fprintf(&b, "perconnection error = %v\n", err)
	}
	return b.String()
}

var (
	loggerType  = reflect.TypeFor[*slog.Logger]()
	trackerType = reflect.TypeFor[*penalty.Tracker]()
)

// dumpValue writes one "path = value" line per leaf. Functions are
// skipped (DropStartup closes over MaxStartups, which is dumped);
// loggers are dumped as the lowest level they pass.
func dumpValue(b *strings.Builder, path string, v reflect.Value) {
	switch {
	case v.Type() == loggerType:
		fmt.Fprintf(b, "%s = %s\n", path, loggerLevel(v.Interface().(*slog.Logger)))
		return
	case v.Kind() == reflect.Func || v.Kind() == reflect.Chan:
		return
	case v.Type() == trackerType && !v.IsNil():
		// The tracker's state is private; what it applies is its Config.
		dumpValue(b, path, reflect.ValueOf(v.Interface().(*penalty.Tracker).Config()))
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			fmt.Fprintf(b, "%s = nil\n", path)
			return
		}
		dumpValue(b, path, v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				dumpValue(b, path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			dumpValue(b, fmt.Sprintf("%s[%v]", path, k), v.MapIndex(k))
		}
	case reflect.Slice, reflect.Array:
		fmt.Fprintf(b, "%s len %d\n", path, v.Len())
		for i := range v.Len() {
			dumpValue(b, fmt.Sprintf("%s[%d]", path, i), v.Index(i))
		}
	default:
		fmt.Fprintf(b, "%s = %v\n", path, v.Interface())
	}
}

func loggerLevel(l *slog.Logger) string {
	for _, lv := range []slog.Level{slog.LevelDebug - 4, slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError, slog.LevelError + 4} {
		if l.Enabled(context.Background(), lv) {
			return "logs from " + lv.String()
		}
	}
	return "logs nothing"
}

// testLogger is the daemon's shape of logger: a level filter over a
// handler that takes everything.
func testLogger() *slog.Logger {
	lv := new(slog.LevelVar)
	return slog.New(&levelHandler{inner: slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug - 4}), level: lv})
}

// exampleFor is a keyword's example value, with the files it names made
// where the translation reads them.
func exampleFor(t *testing.T, ki config.KeywordInfo) string {
	if ki.Name == "HostCertificate" {
		return hostCertFile(t)
	}
	if ki.Name == "Banner" {
		p := filepath.Join(t.TempDir(), "banner")
		if err := os.WriteFile(p, []byte("hello\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if ki.Name == "AuthorizedKeysCommand" || ki.Name == "AuthorizedPrincipalsCommand" {
		// a command needs its user, or the configuration is refused (as by OpenSSH)
		return ki.Example + "\n" + ki.Name + "User nobody"
	}
	return ki.Example
}

// TestNoKeywordIgnored: every keyword the table calls supported, set to
// its example value, changes what the server or the daemon is handed; and
// every one offload applies per connection changes, inside a Match block,
// the settings of the connections it matches and only those. A keyword
// marked supported that nothing applies fails here.
func TestNoKeywordIgnored(t *testing.T) {
	log := testLogger()
	base := settingsDump(t, parseConf(t, ""), log)
	n := 0
	for _, ki := range config.KeywordTable() {
		if ki.Status != config.Supported || ki.Name == "Include" || ki.Name == "Match" {
			continue
		}
		n++
		line := ki.Name + " " + exampleFor(t, ki)
		c := parseConf(t, line+"\n")
		if settingsDump(t, c, log) == base {
			t.Errorf("%s: %q changes nothing the server or daemon is given (table says: %s)", ki.Name, line, ki.Applied)
		}
		if ki.PerConnection {
			checkPerConnection(t, ki, line, log)
		}
	}
	if n < 40 {
		t.Errorf("only %d supported keywords checked", n)
	}
}

// checkPerConnection sets the keyword in a Match User alice block: alice's
// connection settings must differ from the global ones, bob's must be the
// global ones.
func checkPerConnection(t *testing.T, ki config.KeywordInfo, line string, log *slog.Logger) {
	t.Helper()
	c := parseConf(t, "Match User alice\n\t"+line+"\n")
	a0, c0, err := connSettings(c, log)
	if err != nil {
		t.Fatal(err)
	}
	pc := perConnection(c, log)
	dump := func(a any, cc any, err error) string {
		var b strings.Builder
		dumpValue(&b, "auth", reflect.ValueOf(a))
		dumpValue(&b, "conn", reflect.ValueOf(cc))
		fmt.Fprintf(&b, "error = %v\n", err)
		return b.String()
	}
	a, cc, err := pc(config.ConnInfo{User: "alice", Addr: "192.0.2.1"})
	if (a == nil || cc == nil) && err == nil {
		t.Errorf("%s in Match: alice gets the global settings", ki.Name)
		return
	}
	if dump(a, cc, err) == dump(a0, c0, nil) {
		t.Errorf("%s in a Match block changes nothing for the matching connection", ki.Name)
	}
	if a, cc, err := pc(config.ConnInfo{User: "bob", Addr: "192.0.2.1"}); a != nil || cc != nil || err != nil {
		t.Errorf("%s in Match User alice: bob gets other settings (%v)", ki.Name, err)
	}
}

func parseConf(t *testing.T, text string) *config.Config {
	t.Helper()
	c, err := config.Parse("test", strings.NewReader(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// hostCertFile writes a host certificate of the test's default host key
// (whatever key the daemon view opens is not needed: parsing is enough
// for the translation) and returns its path.
func hostCertFile(t *testing.T) string {
	_, caKey, _ := ed25519.GenerateKey(rand.Reader)
	ca, _ := ssh.NewSignerFromSigner(caKey)
	hostPub, _, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(hostPub)
	c := &ssh.Certificate{Key: pub, CertType: ssh.HostCert, ValidPrincipals: []string{"host"}, ValidBefore: ssh.CertTimeInfinity}
	if err := c.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "host-cert.pub")
	if err := os.WriteFile(p, ssh.MarshalAuthorizedKey(c), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
