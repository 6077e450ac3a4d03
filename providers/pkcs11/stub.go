//go:build !cgo || nopkcs11

package pkcs11

import (
	"context"
	"crypto"
	"io"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// Available reports whether this build can load PKCS #11 modules.
const Available = false

// Provider is a placeholder in builds without cgo: Open always fails.
type Provider struct{}

// Open fails with ErrNotBuilt: this binary was built without cgo.
func Open(Config) (*Provider, error) { return nil, ErrNotBuilt }

// OpenContext fails with ErrNotBuilt: this binary was built without cgo.
func OpenContext(context.Context, Config) (*Provider, error) { return nil, ErrNotBuilt }

// OpenURI fails with ErrNotBuilt: this binary was built without cgo.
func OpenURI(string, Config) (*Provider, error) { return nil, ErrNotBuilt }

func (*Provider) Name() string                                          { return DefaultName }
func (*Provider) Kind() provider.Kind                                   { return provider.KindHardware }
func (*Provider) Capabilities() []provider.Capability                   { return nil }
func (*Provider) Close() error                                          { return nil }
func (*Provider) Describe(io.Writer) error                              { return ErrNotBuilt }
func (*Provider) Tokens() []uri.TokenInfo                               { return nil }
func (*Provider) Health() []TokenHealth                                 { return nil }
func (*Provider) Mechanisms() []MechanismCapability                     { return nil }
func (*Provider) Pending() []string                                     { return nil }
func (*Provider) PoolStats() []provider.PoolStats                       { return nil }
func (*Provider) List(context.Context, string) ([]KeyInfo, error)       { return nil, ErrNotBuilt }
func (*Provider) Delete(context.Context, string) (int, error)           { return 0, ErrNotBuilt }
func (*Provider) Signer(context.Context, string) (crypto.Signer, error) { return nil, ErrNotBuilt }
func (*Provider) PublicKey(context.Context, string) (crypto.PublicKey, error) {
	return nil, ErrNotBuilt
}
func (*Provider) Generate(context.Context, string, KeyType) (crypto.Signer, error) {
	return nil, ErrNotBuilt
}
func (*Provider) Import(context.Context, string, crypto.PrivateKey) (crypto.Signer, error) {
	return nil, ErrNotBuilt
}

type testHooks struct{}
