package plan_test

import (
	"context"
	"crypto"
	"errors"
	"slices"
	"testing"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd/plan"
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
func TestResolveLeavesSignaturesToTheMonitor(t *testing.T) {
	reg := provider.New(provider.Config{Policy: provider.Policy{Mode: provider.ModePreferHardware}})
	defer reg.Close()
	for _, p := range []provider.Provider{software.New(), tokenLike{}} {
		if err := reg.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	res := plan.Resolve(reg)
	away := res.Away
	if !slices.Contains(away, "ecdh-p256=token") {
		t.Errorf("away %q lacks the token's key agreement", away)
	}
	for _, a := range away {
		if a == "ecdsa-p256-sha256=token" {
			t.Errorf("away names the token's host-key signature: %q", away)
		}
	}
	pl := &plan.Plan{}
	pl.Apply(res)
	for _, s := range []plan.Stage{plan.Preauth, plan.Postauth} {
		if a, _ := pl.Lookup(s, "ecdsa-p256-sha256"); a.Where != plan.InMonitor || a.Provider != "token" {
			t.Errorf("%s: host-key signature planned as %+v, want the token in the monitor", s, a)
		}
		if a, _ := pl.Lookup(s, "ecdh-p256"); a.Where != plan.InChild || a.Provider != "software" {
			t.Errorf("%s: ecdh-p256 planned as %+v, want software in the child", s, a)
		}
		if a, _ := pl.Lookup(s, "x25519"); a.Provider != "software" {
			t.Errorf("%s: x25519 planned to %q, want software", s, a.Provider)
		}
	}
	if len(pl.Remote()) != 0 {
		t.Errorf("remote AEADs %v without a token AEAD", pl.Remote())
	}
}
