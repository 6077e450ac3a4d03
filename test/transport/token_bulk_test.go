package transport_test

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd"
)

// TestOpenSSHBulkOnToken pins aes128-gcm to a SoftHSM token: the OpenSSH
// client's upload and download go through the token's AES-GCM (one
// session per direction), as the metrics show.
func TestOpenSSHBulkOnToken(t *testing.T) {
	if !pkcs11.Available {
		testenv.Missing(t, "PKCS #11 support (built without cgo)", "build with CGO_ENABLED=1")
	}
	tok := softhsmtest.NewToken(t, "bulk")
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{})
	if err != nil {
		t.Fatal(err)
	}
	metrics := provider.NewMetrics()
	reg := provider.New(provider.Config{Metrics: metrics})
	t.Cleanup(func() { reg.Close() })
	for _, pr := range []provider.Provider{cpu.New(cpu.Detect()), p, software.New()} {
		if err := reg.Register(pr); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.SetPolicy(provider.Policy{Pins: map[string]string{"aes128-gcm": p.Name()}}); err != nil {
		t.Fatal(err)
	}
	if ex, err := reg.Explain("aes128-gcm"); err != nil || ex.Chosen != p.Name() {
		t.Skipf("the token does not serve aes128-gcm here: %v %v", ex, err)
	}
	f := newFixture(t, &sshd.Config{Registry: reg, HostKeys: []crypto.Signer{allHostKeys()[0]}})
	data := make([]byte, 2<<20)
	rand.Read(data)
	opts := []string{"Ciphers=aes128-gcm@openssh.com"}
	out, errOut, code := f.run(t, opts, "sha256sum", data)
	if code != 0 || !strings.HasPrefix(out, fmt.Sprintf("%x", sha256.Sum256(data))) {
		t.Fatalf("status %d stdout %q stderr %q", code, out, errOut)
	}
	var seal, open uint64
	for _, s := range metrics.Snapshot() {
		if s.Provider == p.Name() && s.Algorithm == "aes128-gcm" {
			switch s.Op {
			case provider.OpSeal.String():
				seal += s.Ops
			case provider.OpOpen.String():
				open += s.Ops
			}
		}
	}
	if seal == 0 || open < 32 {
		t.Fatalf("token AES-GCM: %d seals, %d opens; want the traffic on the token", seal, open)
	}
	t.Logf("token AES-GCM: %d seals, %d opens", seal, open)
}
