//go:build cgo && !nopkcs11

package sshd

import (
	"crypto/rand"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/software"
)

// TestSeparatedTokenAttachesLater: a separated server started while the
// token its policy pins AES-GCM to is absent; once the token appears and
// attaches, a new login's post-auth process gets AES-GCM from it through
// the monitor (its pins are those of the registry when it starts, not
// when the monitor started).
func TestSeparatedTokenAttachesLater(t *testing.T) {
	tok := softhsmtest.NewToken(t, "sep-late")
	tok.Delete(t)
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{AllowMissing: true, HealthInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reg := provider.New(provider.Config{Policy: provider.Policy{Pins: map[string]string{"aes128-gcm": pkcs11.DefaultName}}})
	t.Cleanup(func() { reg.Close() })
	for _, pr := range []provider.Provider{cpu.New(cpu.Detect()), software.New(), p} {
		if err := reg.Register(pr); err != nil {
			t.Fatal(err)
		}
	}
	f := newSeparatedWith(t, &Separation{Workers: 1, LogLevel: slog.LevelDebug}, func(c *Config) {
		c.Registry = reg
		c.RekeyLimit = 128 << 10
	})
	tok.Recreate(t)
	// Attached is not enough: the token leaves Pending() when its attach
	// starts, and the registry serves from it once the attach has listed
	// its mechanisms (CI at load 12 dialled in between and got the CPU's).
	served := func() bool {
		ex, err := reg.Explain("aes128-gcm")
		return err == nil && ex.Chosen == pkcs11.DefaultName
	}
	if !testenv.WaitUntil(t, served) {
		t.Fatalf("the registry does not serve aes128-gcm from the token: %v", p.Pending())
	}
	c := f.dialWith(t, func(cc *ssh.ClientConfig) { cc.Ciphers = []string{"aes128-gcm@openssh.com"} })
	data := make([]byte, 1<<20)
	rand.Read(data)
	run(t, c, "sha256sum", data) // past RekeyLimit: the post-auth process re-exchanges and logs its ciphers
	post := regexp.MustCompile(`.*key exchange done.*proc="offload-sshd: ` + regexp.QuoteMeta(f.user) + `".*`)
	var line string
	if !testenv.WaitUntil(t, func() bool { line = post.FindString(f.logs.String()); return line != "" }) {
		t.Fatalf("no key re-exchange in the post-auth process:\n%s", f.logs.String())
	}
	if !regexp.MustCompile(`cipher_out_provider="aes128-gcm by pkcs11 \(hardware, token \\"sep-late\\" slot \d+\): through the monitor"`).MatchString(line) {
		t.Errorf("the post-auth process does not seal with the attached token: %s", line)
	}
}
