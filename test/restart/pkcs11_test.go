//go:build cgo && !nopkcs11

package restart

import (
	"context"
	"testing"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// TestRestartKeepsTransferTokenKey is TestRestartKeepsTransfer with the
// host key in a SoftHSM token: the keeper opens the module again (a new
// C_Initialize in a new process) and signs the re-exchanges there.
func TestRestartKeepsTransferTokenKey(t *testing.T) {
	tok := softhsmtest.NewToken(t, "restart-keeper")
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Generate(context.Background(), tok.URI("hostkey"), pkcs11.Ed25519); err != nil {
		p.Close()
		t.Fatal(err)
	}
	p.Close()
	keyURI := (&uri.URI{Token: tok.Label, Object: "hostkey"}).String()
	s := newServer(t, keyURI, "RekeyLimit 256K", "PKCS11Module "+tok.Module, "PKCS11PinSource "+tok.PINFile,
		"PKCS11Environment SOFTHSM2_CONF="+tok.ConfPath, "PKCS11StateDir "+t.TempDir())
	restartDuringTransfer(t, s)
}
