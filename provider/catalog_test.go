package provider_test

import (
	"testing"

	"github.com/offload/offload/provider"
)

func TestCatalogSizes(t *testing.T) {
	for _, a := range provider.Algorithms() {
		switch a.Family {
		case provider.FamilyAEAD:
			if a.KeySize == 0 || a.NonceSize == 0 || a.TagSize == 0 {
				t.Errorf("%s: AEAD without key, nonce or tag size", a.Name)
			}
		case provider.FamilyStream, provider.FamilyKeyStream:
			if a.KeySize == 0 || a.NonceSize == 0 {
				t.Errorf("%s: stream without key or nonce size", a.Name)
			}
		case provider.FamilyMAC, provider.FamilyOneTimeMAC, provider.FamilyHash:
			if a.TagSize == 0 {
				t.Errorf("%s: no output size", a.Name)
			}
		case provider.FamilyKeyAgreement, provider.FamilyKEM:
			if a.PublicKeySize == 0 || a.SharedSize == 0 {
				t.Errorf("%s: no public key or shared secret size", a.Name)
			}
		case provider.FamilyBlock:
			if a.KeySize == 0 || a.BlockSize == 0 {
				t.Errorf("%s: block cipher without key or block size", a.Name)
			}
		case provider.FamilySignature:
		default:
			t.Errorf("%s: unknown family %v", a.Name, a.Family)
		}
		if got, err := provider.Lookup(a.Name); err != nil || got != a {
			t.Errorf("Lookup(%s) = %v, %v", a.Name, got, err)
		}
	}
	if _, err := provider.Lookup("des-cbc"); err == nil {
		t.Error("Lookup of an unknown name succeeded")
	}
}
