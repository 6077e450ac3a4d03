// Package lanetest is a crypto provider for tests and benchmarks of
// pipelining: AES-GCM served as a provider.FanOut of Go's AES-GCM whose
// every call takes a set while, as a call to a token's unit or a network
// HSM does, and fails on demand. Its output is Go's AES-GCM, so a peer
// with any AES-GCM reads it.
//
// # Use
//
//	lp := &lanetest.Provider{Lanes: 4, Delay: 2 * time.Millisecond}
//	reg, _ := lp.Registry() // aes128-gcm and aes256-gcm pinned to lp
//	lp.FailSeal(10)         // the 10th seal from now fails with ErrFault
//
// Peak says how many calls ran at once.
package lanetest

import (
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/offload/offload/internal/devicewait"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/software"
)

// Name is the provider's name.
const Name = "lanes"

// ErrFault is the error of a call made to fail.
var ErrFault = errors.New("lanetest: device removed")

// Provider serves aes128-gcm and aes256-gcm. Set the fields before use.
type Provider struct {
	// Lanes is the most calls an AEAD serves at once (FanOut's limit);
	// 1 gives a plain AEAD, with Lanes 1, whose calls still may overlap.
	Lanes int
	// Delay is added to every call; with Jitter it is drawn from
	// [0, 2×Delay).
	Delay  time.Duration
	Jitter bool

	failSeal, failOpen atomic.Int64
	seals, opens       atomic.Int64
	inside, peak       atomic.Int32
}

// Name is Name.
func (*Provider) Name() string { return Name }

// Kind is hardware, as a token's is.
func (*Provider) Kind() provider.Kind { return provider.KindHardware }

// Close does nothing.
func (*Provider) Close() error { return nil }

// Capabilities are the two AES-GCM algorithms.
func (*Provider) Capabilities() []provider.Capability {
	ops := provider.OpSeal | provider.OpOpen
	return []provider.Capability{{Algorithm: "aes128-gcm", Ops: ops, Flags: provider.FlagHardware},
		{Algorithm: "aes256-gcm", Ops: ops, Flags: provider.FlagHardware}}
}

// NewAEAD returns a FanOut of up to Lanes slow lanes (one lane alone
// when Lanes is 1 or less).
func (p *Provider) NewAEAD(_ *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	k := append([]byte(nil), key...)
	mk := func() (cipher.AEAD, error) {
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		g, err := cipher.NewGCM(block)
		return &lane{AEAD: g, p: p}, err
	}
	first, err := mk()
	if err != nil || p.Lanes <= 1 {
		return first, err
	}
	return provider.NewFanOut([]cipher.AEAD{first}, p.Lanes, mk)
}

// Registry returns a registry of the CPU and software providers and p,
// with both AES-GCM algorithms pinned to p.
func (p *Provider) Registry() (*provider.Registry, error) {
	reg := provider.New(provider.Config{})
	for _, pr := range []provider.Provider{cpu.New(cpu.Detect()), software.New(), p} {
		if err := reg.Register(pr); err != nil {
			reg.Close()
			return nil, err
		}
	}
	pins, err := provider.ParsePins("aes128-gcm=" + Name + " aes256-gcm=" + Name)
	if err == nil {
		err = reg.SetPolicy(provider.Policy{Pins: pins})
	}
	if err != nil {
		reg.Close()
		return nil, err
	}
	return reg, nil
}

// FailSeal makes the n-th seal from now (1: the next) fail with ErrFault.
func (p *Provider) FailSeal(n int64) { p.failSeal.Store(p.seals.Load() + n) }

// FailOpen makes the n-th open from now fail with ErrFault.
func (p *Provider) FailOpen(n int64) { p.failOpen.Store(p.opens.Load() + n) }

// Seals and Opens count the calls so far.
func (p *Provider) Seals() int64 { return p.seals.Load() }

// Opens counts the opens so far.
func (p *Provider) Opens() int64 { return p.opens.Load() }

// Peak is the most calls that have been inside lanes at once.
func (p *Provider) Peak() int { return int(p.peak.Load()) }

// lane is one of an AEAD's lanes.
type lane struct {
	cipher.AEAD
	p *Provider
}

func (l *lane) wait() {
	n := l.p.inside.Add(1)
	for pk := l.p.peak.Load(); n > pk && !l.p.peak.CompareAndSwap(pk, n); pk = l.p.peak.Load() {
	}
	d := l.p.Delay
	if l.p.Jitter && d > 0 {
		d = rand.N(2 * d)
	}
	if d > 0 {
		devicewait.Wait(d)
	}
	l.p.inside.Add(-1)
}

// SealErr seals after the delay, or fails when told to.
func (l *lane) SealErr(dst, nonce, pt, ad []byte) ([]byte, error) {
	l.wait()
	if n := l.p.seals.Add(1); n == l.p.failSeal.Load() {
		return nil, ErrFault
	}
	return l.AEAD.Seal(dst, nonce, pt, ad), nil
}

// OpenErr opens after the delay, or fails when told to.
func (l *lane) OpenErr(dst, nonce, ct, ad []byte) ([]byte, error) {
	l.wait()
	if n := l.p.opens.Add(1); n == l.p.failOpen.Load() {
		return nil, ErrFault
	}
	out, err := l.AEAD.Open(dst, nonce, ct, ad)
	if err != nil {
		return nil, provider.ErrAuthentication
	}
	return out, nil
}

// Seal is SealErr; a failure panics, as cipher.AEAD's Seal cannot fail.
func (l *lane) Seal(dst, nonce, pt, ad []byte) []byte {
	out, err := l.SealErr(dst, nonce, pt, ad)
	if err != nil {
		panic(err)
	}
	return out
}

// Open is OpenErr.
func (l *lane) Open(dst, nonce, ct, ad []byte) ([]byte, error) { return l.OpenErr(dst, nonce, ct, ad) }
