package sshd

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"reflect"
	"testing"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd/plan"
	"github.com/offload/offload/sshd/transport"
)

// The plan a server resolves is a fixed point of the one constructor:
// built again from it — with the server's registry and keys, as in one
// process, or as a child, from the plan alone — a transport server
// offers the same algorithms and has the same cipher scores.
func TestResolvedPlanIsFixed(t *testing.T) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	softOnly := provider.New(provider.Config{Policy: provider.Policy{Deny: []provider.DenyEntry{{Algorithm: "aes256-gcm"}}}})
	if err := softOnly.Register(software.New()); err != nil {
		t.Fatal(err)
	}
	defer softOnly.Close()
	for name, cfg := range map[string]*Config{
		"zero":     {},
		"hardened": {CryptoProfile: transport.ProfileHardened},
		"lists": {Ciphers: []string{"aes256-gcm@openssh.com", "aes128-ctr", "chacha20-poly1305@openssh.com"},
			MACs: []string{"hmac-sha2-512-etm@openssh.com"}, KexAlgorithms: []string{"curve25519-sha256"}},
		"measured": {CipherSelection: transport.SelectionMeasured, RekeyLimit: 1 << 20, Compression: true},
		"denied":   {Registry: softOnly, HostKeys: []crypto.Signer{key}, Ciphers: []string{"aes256-gcm@openssh.com", "aes128-gcm@openssh.com"}},
	} {
		t.Run(name, func(t *testing.T) {
			st, err := cfg.settings()
			if err != nil {
				t.Fatal(err)
			}
			pl, tr, err := newTransport(st)
			if err != nil {
				t.Fatal(err)
			}
			inProcess, err := pl.TransportConfig(st.Registry, st.HostKeys, st.log)
			if err != nil {
				t.Fatal(err)
			}
			sameOffer(t, "in one process", tr, inProcess)
			_, pubs, err := transport.NewHostKeySigner(st.HostKeys, nil)
			if err != nil {
				t.Fatal(err)
			}
			child := *pl
			for _, p := range pubs {
				child.HostPublicKeys = append(child.HostPublicKeys, p.Marshal())
			}
			sameOffer(t, "in a child", tr, childConfig(t, &child))
		})
	}
}

func childConfig(t *testing.T, pl *plan.Plan) *transport.Config {
	t.Helper()
	got, err := plan.Parse(pl.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	cfg, reg, err := got.Build(plan.Preauth, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return cfg
}

func sameOffer(t *testing.T, where string, want *transport.Server, cfg *transport.Config) {
	t.Helper()
	got, err := transport.NewServer(cfg)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	k1, h1, c1, m1 := want.Offer()
	k2, h2, c2, m2 := got.Offer()
	if !reflect.DeepEqual([][]string{k1, h1, c1, m1}, [][]string{k2, h2, c2, m2}) {
		t.Errorf("%s: offer %v %v %v %v, want %v %v %v %v", where, k2, h2, c2, m2, k1, h1, c1, m1)
	}
	if !reflect.DeepEqual(got.CipherScores(), want.CipherScores()) {
		t.Errorf("%s: cipher scores %v, want %v", where, got.CipherScores(), want.CipherScores())
	}
}
