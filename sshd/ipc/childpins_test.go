package ipc_test

import (
	"context"
	"crypto"
	"errors"
	"slices"
	"testing"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd/ipc"
)

// tokenLike is a hardware provider, as a token is, that offers a
// host-key signature and a key agreement.
type tokenLike struct{}

func (tokenLike) Name() string        { return "token" }
func (tokenLike) Kind() provider.Kind { return provider.KindHardware }
func (tokenLike) Close() error        { return nil }
func (tokenLike) Capabilities() []provider.Capability {
	return []provider.Capability{{Algorithm: "ecdsa-p256-sha256", Ops: provider.OpSign}, {Algorithm: "ecdh-p256", Ops: provider.OpDerive}}
}
func (tokenLike) CanOpen(string) bool { return false }
func (tokenLike) Signer(context.Context, string) (crypto.Signer, error) {
	return nil, errors.New("no keys")
}
func (tokenLike) NewKeyAgreement(*provider.Algorithm) (provider.KeyAgreement, error) {
	return nil, errors.New("not in this test")
}

// Host-key signatures a token serves are the monitor's (children never
// sign), so they are no reason for the warning about primitives the
// children cannot reach; a key agreement the token was chosen for is.
func TestChildPinsLeavesSignaturesToTheMonitor(t *testing.T) {
	reg := provider.New(provider.Config{Policy: provider.Policy{Mode: provider.ModePreferHardware}})
	defer reg.Close()
	for _, p := range []provider.Provider{software.New(), tokenLike{}} {
		if err := reg.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	pins, _, away := ipc.ChildPins(reg)
	if !slices.Contains(away, "ecdh-p256=token") {
		t.Errorf("away %q lacks the token's key agreement", away)
	}
	for _, a := range away {
		if a == "ecdsa-p256-sha256=token" {
			t.Errorf("away names the token's host-key signature: %q", away)
		}
	}
	if pins["ecdsa-p256-sha256"] != "" || pins["ecdh-p256"] != "" {
		t.Errorf("children pinned to the token: %v", pins)
	}
	if pins["x25519"] != "software" {
		t.Errorf("x25519 pinned to %q, want software", pins["x25519"])
	}
}
