//go:build cgo && !nopkcs11

package pkcs11

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/miekg/pkcs11"
	"github.com/offload/offload/provider"
)

// mechRow maps a catalog algorithm onto the mechanisms a token must offer
// for it. Key sizes are in the unit the mechanism reports (bytes for AES,
// bits for EC and RSA); zero means any.
type mechRow struct {
	alg     string
	mech    uint   // the working mechanism
	keySize uint   // must lie within the mechanism's min..max
	gen     []uint // key-pair generation mechanism that adds OpGenerate
	need    []uint // further mechanisms required for the algorithm at all
	ops     provider.Op
	flags   provider.Flag
}

// mechTable is the whole mapping, as data.
var mechTable = []mechRow{
	{alg: "aes128-gcm", mech: pkcs11.CKM_AES_GCM, keySize: 16, ops: provider.OpSeal | provider.OpOpen},
	{alg: "aes256-gcm", mech: pkcs11.CKM_AES_GCM, keySize: 32, ops: provider.OpSeal | provider.OpOpen},
	{alg: "ed25519", mech: ckmEDDSA, keySize: 256, gen: []uint{ckmECEdwardsKeyPairGen}, ops: provider.OpSign, flags: provider.FlagKeyResident},
	{alg: "ecdsa-p256-sha256", mech: pkcs11.CKM_ECDSA, keySize: 256, gen: []uint{pkcs11.CKM_EC_KEY_PAIR_GEN}, ops: provider.OpSign, flags: provider.FlagKeyResident},
	{alg: "ecdsa-p384-sha384", mech: pkcs11.CKM_ECDSA, keySize: 384, gen: []uint{pkcs11.CKM_EC_KEY_PAIR_GEN}, ops: provider.OpSign, flags: provider.FlagKeyResident},
	{alg: "rsa-pkcs1v15-sha256", mech: pkcs11.CKM_RSA_PKCS, keySize: 2048, gen: []uint{pkcs11.CKM_RSA_PKCS_KEY_PAIR_GEN}, ops: provider.OpSign, flags: provider.FlagKeyResident},
	{alg: "rsa-pkcs1v15-sha512", mech: pkcs11.CKM_RSA_PKCS, keySize: 2048, gen: []uint{pkcs11.CKM_RSA_PKCS_KEY_PAIR_GEN}, ops: provider.OpSign, flags: provider.FlagKeyResident},
	{alg: "rsa-pss-sha256", mech: pkcs11.CKM_RSA_PKCS_PSS, keySize: 2048, gen: []uint{pkcs11.CKM_RSA_PKCS_KEY_PAIR_GEN}, ops: provider.OpSign, flags: provider.FlagKeyResident},
	{alg: "rsa-pss-sha512", mech: pkcs11.CKM_RSA_PKCS_PSS, keySize: 2048, gen: []uint{pkcs11.CKM_RSA_PKCS_KEY_PAIR_GEN}, ops: provider.OpSign, flags: provider.FlagKeyResident},
	{alg: "ecdh-p256", mech: pkcs11.CKM_ECDH1_DERIVE, keySize: 256, need: []uint{pkcs11.CKM_EC_KEY_PAIR_GEN}, ops: provider.OpDerive},
	{alg: "ecdh-p384", mech: pkcs11.CKM_ECDH1_DERIVE, keySize: 384, need: []uint{pkcs11.CKM_EC_KEY_PAIR_GEN}, ops: provider.OpDerive},
}

// tokenCaps is what a token offers: its mechanisms and the catalog
// algorithms they cover. It is replaced whole when the token attaches.
type tokenCaps struct {
	mechs map[uint]pkcs11.MechanismInfo
	caps  []capEntry
}

// capsOf returns what t offers now (empty before it attaches).
func (t *token) capsOf() *tokenCaps { return t.caps.Load() }

// capEntry is one algorithm a token offers and the mechanism behind it.
type capEntry struct {
	provider.Capability
	Mechanism string
	Info      pkcs11.MechanismInfo
}

// readMechanisms asks the token for its mechanisms (C_GetMechanismList,
// C_GetMechanismInfo) and maps them onto the catalog. AES-GCM is only
// offered when a known-answer test passes, so a token that ignores the
// caller's IV or tag length is never used for SSH packets.
func (t *token) readMechanisms() {
	m := t.p.mod
	m.mu.RLock()
	defer m.mu.RUnlock()
	slot, _, desc := t.state()
	tc := &tokenCaps{mechs: map[uint]pkcs11.MechanismInfo{}}
	defer t.caps.Store(tc)
	list, err := t.p.api.GetMechanismList(slot)
	if err != nil {
		t.p.log.Warn("token lists no mechanisms", "token", desc.Label, "err", err)
		return
	}
	for _, mech := range list {
		info, err := t.p.api.GetMechanismInfo(slot, []*pkcs11.Mechanism{mech})
		if err == nil {
			tc.mechs[mech.Mechanism] = info
		}
	}
	for _, row := range mechTable {
		if c, ok := row.capability(tc.mechs); ok {
			tc.caps = append(tc.caps, c)
		}
	}
	if tc.offers("aes128-gcm", provider.OpSeal) || tc.offers("aes256-gcm", provider.OpSeal) {
		if err := t.gcmSelfTest(); err != nil {
			t.p.log.Warn("token's AES-GCM failed the known-answer test; not using it", "token", desc.Label, "err", err)
			caps := tc.caps[:0]
			for _, c := range tc.caps {
				if c.Algorithm == "aes128-gcm" || c.Algorithm == "aes256-gcm" {
					continue
				}
				caps = append(caps, c)
			}
			tc.caps = caps
		}
	}
}

// capability maps the row onto the token's mechanisms, if they cover it.
func (row *mechRow) capability(mechs map[uint]pkcs11.MechanismInfo) (capEntry, bool) {
	info, ok := mechs[row.mech]
	if !ok || !inRange(row.keySize, info) {
		return capEntry{}, false
	}
	for _, n := range row.need {
		if _, ok := mechs[n]; !ok {
			return capEntry{}, false
		}
	}
	c := capEntry{Capability: provider.Capability{Algorithm: row.alg, Ops: row.ops, Flags: row.flags},
		Mechanism: mechName(row.mech), Info: info}
	if info.Flags&pkcs11.CKF_HW != 0 {
		c.Flags |= provider.FlagHardware
	}
	for _, gen := range row.gen {
		if gi, ok := mechs[gen]; ok && inRange(row.keySize, gi) {
			c.Ops |= provider.OpGenerate
		}
	}
	return c, true
}

func inRange(size uint, info pkcs11.MechanismInfo) bool {
	if size == 0 || (info.MinKeySize == 0 && info.MaxKeySize == 0) {
		return true
	}
	// Some modules report AES sizes in bits although the standard says bytes.
	if size <= 32 && info.MaxKeySize >= 128 {
		size *= 8
	}
	return info.MinKeySize <= size && size <= info.MaxKeySize
}

func (t *token) offers(alg string, ops provider.Op) bool { return t.capsOf().offers(alg, ops) }

func (tc *tokenCaps) offers(alg string, ops provider.Op) bool {
	for _, c := range tc.caps {
		if c.Algorithm == alg && c.Ops&ops == ops {
			return true
		}
	}
	return false
}

// unionCaps merges the tokens' capabilities: an operation offered by any
// token is offered; hardware only when every token offering it says so.
func unionCaps(tokens []*token) []provider.Capability {
	idx := map[string]int{}
	var out []provider.Capability
	for _, t := range tokens {
		for _, c := range t.capsOf().caps {
			i, ok := idx[c.Algorithm]
			if !ok {
				idx[c.Algorithm] = len(out)
				out = append(out, c.Capability)
				continue
			}
			out[i].Ops |= c.Ops
			out[i].Flags = (out[i].Flags|c.Flags)&^provider.FlagHardware | out[i].Flags&c.Flags&provider.FlagHardware
		}
	}
	return out
}

// Mechanisms lists, per token, the catalog algorithms and the mechanisms
// serving them.
func (p *Provider) Mechanisms() []MechanismCapability {
	var out []MechanismCapability
	for _, t := range p.tokens {
		label := t.label()
		for _, c := range t.capsOf().caps {
			out = append(out, MechanismCapability{Token: label, Algorithm: c.Algorithm, Mechanism: c.Mechanism,
				MinKeySize: c.Info.MinKeySize, MaxKeySize: c.Info.MaxKeySize,
				Hardware: c.Info.Flags&pkcs11.CKF_HW != 0, Ops: c.Ops.String()})
		}
	}
	return out
}

// RawMechanisms lists every mechanism each token reports, by name.
func (p *Provider) RawMechanisms() map[string][]string {
	out := map[string][]string{}
	for _, t := range p.tokens {
		var names []string
		for m := range t.capsOf().mechs {
			names = append(names, mechName(m))
		}
		sort.Strings(names)
		out[t.label()] = names
	}
	return out
}

var mechNames = map[uint]string{
	pkcs11.CKM_AES_GCM: "CKM_AES_GCM", ckmEDDSA: "CKM_EDDSA", pkcs11.CKM_ECDSA: "CKM_ECDSA",
	pkcs11.CKM_RSA_PKCS: "CKM_RSA_PKCS", pkcs11.CKM_RSA_PKCS_PSS: "CKM_RSA_PKCS_PSS",
	pkcs11.CKM_ECDH1_DERIVE: "CKM_ECDH1_DERIVE", pkcs11.CKM_EC_KEY_PAIR_GEN: "CKM_EC_KEY_PAIR_GEN",
	ckmECEdwardsKeyPairGen: "CKM_EC_EDWARDS_KEY_PAIR_GEN", pkcs11.CKM_RSA_PKCS_KEY_PAIR_GEN: "CKM_RSA_PKCS_KEY_PAIR_GEN",
	pkcs11.CKM_AES_KEY_GEN: "CKM_AES_KEY_GEN", pkcs11.CKM_SHA256: "CKM_SHA256", pkcs11.CKM_SHA384: "CKM_SHA384",
	pkcs11.CKM_SHA512: "CKM_SHA512", pkcs11.CKM_AES_CTR: "CKM_AES_CTR", pkcs11.CKM_AES_CBC: "CKM_AES_CBC",
	pkcs11.CKM_AES_ECB: "CKM_AES_ECB", pkcs11.CKM_SHA256_HMAC: "CKM_SHA256_HMAC", pkcs11.CKM_SHA512_HMAC: "CKM_SHA512_HMAC",
}

func mechName(m uint) string {
	if n, ok := mechNames[m]; ok {
		return n
	}
	return fmt.Sprintf("0x%08X", m)
}

// Describe prints, for `offload providers -v`, each token with its state
// and session pool, then the catalog algorithms it offers and the
// mechanisms behind them.
func (p *Provider) Describe(w io.Writer) error {
	health := p.Health()
	mechs := p.Mechanisms()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, h := range health {
		d := h.Token
		state := "up"
		if !h.Up {
			state = "DOWN: " + h.Error
		}
		fmt.Fprintf(tw, "token %q\tserial %s, %s, firmware %s, slot %d\t%s; sessions %d in use, %d idle, max %d; %d recoveries\n",
			d.Label, d.Serial, d.Model, d.Firmware, d.SlotID, state, h.InUse, h.Idle, h.Max, h.Recoveries)
		for _, m := range mechs {
			if m.Token != d.Label {
				continue
			}
			hw := "no CKF_HW"
			if m.Hardware {
				hw = "CKF_HW"
			}
			fmt.Fprintf(tw, "  %s\t%s (key size %d..%d, %s)\t%s\n", m.Algorithm, m.Mechanism, m.MinKeySize, m.MaxKeySize, hw, m.Ops)
		}
	}
	return tw.Flush()
}

// MechanismMapping is one catalog algorithm the provider can serve and
// the mechanism a token must offer for it.
type MechanismMapping struct {
	Algorithm string
	Mechanism string
}

// Mappings lists every catalog algorithm the provider maps onto a
// PKCS #11 mechanism, in table order: what a token may offer.
func Mappings() []MechanismMapping {
	out := make([]MechanismMapping, len(mechTable))
	for i, row := range mechTable {
		out[i] = MechanismMapping{Algorithm: row.alg, Mechanism: mechName(row.mech)}
	}
	return out
}
