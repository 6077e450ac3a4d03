package providertest

import (
	"testing"

	"github.com/offload/offload/provider"
)

// familyOps are the operations a capability of each family may list.
var familyOps = map[provider.Family]provider.Op{
	provider.FamilyAEAD:         provider.OpSeal | provider.OpOpen,
	provider.FamilyStream:       provider.OpEncrypt,
	provider.FamilyKeyStream:    provider.OpEncrypt,
	provider.FamilyMAC:          provider.OpMAC,
	provider.FamilyOneTimeMAC:   provider.OpMAC,
	provider.FamilySignature:    provider.OpSign | provider.OpVerify | provider.OpGenerate,
	provider.FamilyKeyAgreement: provider.OpDerive | provider.OpGenerate,
	provider.FamilyKEM:          provider.OpEncapsulate | provider.OpDecapsulate | provider.OpGenerate,
	provider.FamilyHash:         provider.OpHash,
	provider.FamilyBlock:        provider.OpEncrypt,
}

// TestProvider runs the conformance suite on p: it checks the provider's
// name, kind and capability list, then runs, as a subtest named after each
// listed algorithm, the sub-suite of the algorithm's family.
//
// Signature capabilities are tested through KeyGenerator when they list
// OpGenerate; otherwise the caller must open keys itself and call
// TestSigner, and the subtest is skipped saying so.
func TestProvider(t *testing.T, p provider.Provider) {
	t.Helper()
	if p == nil {
		t.Fatalf("nil provider")
	}
	checkIdentity(t, p)
	caps := p.Capabilities()
	if len(caps) == 0 {
		// A CPU provider on a machine without crypto instructions offers
		// nothing; that is not a fault.
		t.Skipf("provider %s lists no capabilities", p.Name())
	}
	seen := map[string]bool{}
	for _, c := range caps {
		alg, err := provider.Lookup(c.Algorithm)
		if err != nil {
			t.Errorf("capability %q: %v", c.Algorithm, err)
			continue
		}
		if seen[alg.Name] {
			t.Errorf("capability %s listed twice", alg.Name)
			continue
		}
		seen[alg.Name] = true
		t.Run(alg.Name, func(t *testing.T) {
			checkCapability(t, p, alg, c)
			testFamily(t, p, alg, c)
		})
	}
}

func checkIdentity(t *testing.T, p provider.Provider) {
	t.Helper()
	if p.Name() == "" {
		t.Errorf("provider has an empty name")
	}
	switch p.Kind() {
	case provider.KindSoftware, provider.KindCPU, provider.KindHardware:
	default:
		t.Errorf("provider %s has unknown kind %v", p.Name(), p.Kind())
	}
}

// checkCapability checks that c lists operations of its family and flags
// that fit the provider's kind.
func checkCapability(t *testing.T, p provider.Provider, alg *provider.Algorithm, c provider.Capability) {
	t.Helper()
	allowed := familyOps[alg.Family]
	if c.Ops == 0 {
		t.Errorf("%s lists no operations", alg.Name)
	}
	if extra := c.Ops &^ allowed; extra != 0 {
		t.Errorf("%s lists operations %v, which a %s does not have", alg.Name, extra, alg.Family)
	}
	if c.Flags&provider.FlagHardware != 0 && p.Kind() == provider.KindSoftware {
		t.Errorf("%s is flagged hardware by a software provider", alg.Name)
	}
}

// testFamily runs the sub-suite for alg's family, failing when p lists the
// capability without implementing the matching interface.
func testFamily(t *testing.T, p provider.Provider, alg *provider.Algorithm, c provider.Capability) {
	t.Helper()
	missing := func(iface string) {
		t.Fatalf("%s lists %s but does not implement provider.%s", p.Name(), alg.Name, iface)
	}
	switch alg.Family {
	case provider.FamilyAEAD:
		if q, ok := p.(provider.AEADProvider); ok {
			TestAEAD(t, q, alg)
		} else {
			missing("AEADProvider")
		}
	case provider.FamilyStream:
		if q, ok := p.(provider.StreamProvider); ok {
			TestStream(t, q, alg)
		} else {
			missing("StreamProvider")
		}
	case provider.FamilyKeyStream:
		if q, ok := p.(provider.KeyStreamProvider); ok {
			TestKeyStream(t, q, alg)
		} else {
			missing("KeyStreamProvider")
		}
	case provider.FamilyBlock:
		if q, ok := p.(provider.BlockProvider); ok {
			TestBlock(t, q, alg)
		} else {
			missing("BlockProvider")
		}
	case provider.FamilyMAC:
		if q, ok := p.(provider.MACProvider); ok {
			TestMAC(t, q, alg)
		} else {
			missing("MACProvider")
		}
	case provider.FamilyOneTimeMAC:
		if q, ok := p.(provider.OneTimeMACProvider); ok {
			TestOneTimeMAC(t, q, alg)
		} else {
			missing("OneTimeMACProvider")
		}
	case provider.FamilyHash:
		if q, ok := p.(provider.HashProvider); ok {
			TestHash(t, q, alg)
		} else {
			missing("HashProvider")
		}
	case provider.FamilyKeyAgreement:
		if q, ok := p.(provider.KeyAgreementProvider); ok {
			TestKeyAgreement(t, q, alg)
		} else {
			missing("KeyAgreementProvider")
		}
	case provider.FamilyKEM:
		if q, ok := p.(provider.KEMProvider); ok {
			TestKEM(t, q, alg)
		} else {
			missing("KEMProvider")
		}
	case provider.FamilySignature:
		testSignatureCapability(t, p, alg, c)
	default:
		t.Errorf("the suite has no tests for family %v of %s", alg.Family, alg.Name)
	}
}

func testSignatureCapability(t *testing.T, p provider.Provider, alg *provider.Algorithm, c provider.Capability) {
	t.Helper()
	g, ok := p.(provider.KeyGenerator)
	switch {
	case c.Ops&provider.OpGenerate != 0 && !ok:
		t.Fatalf("%s lists generate for %s but does not implement provider.KeyGenerator", p.Name(), alg.Name)
	case c.Ops&provider.OpGenerate == 0:
		t.Skipf("%s does not generate %s keys: open one and call providertest.TestSigner", p.Name(), alg.Name)
	}
	TestKeyGenerator(t, g, alg)
}
