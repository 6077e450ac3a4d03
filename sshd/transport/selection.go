package transport

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/offload/offload/provider"
)

// Cipher selection (Config.CipherSelection). The client's order picks the
// cipher among those both sides list (RFC 4253 §7.1), so a server's order
// changes nothing. What a server can do is choose what it lists after
// seeing the client's KEXINIT: with "measured" it waits for it and, per
// direction, steers the client off its own choice only to ciphers that
// measure faster than that choice by more than noiseMargin, and only when
// the client's choice is measured at all; otherwise it lists everything
// and the client's order stands.
const (
	SelectionClient   = "client"
	SelectionMeasured = "measured"

	// fastShare is how close to the fastest accepted cipher another must
	// measure to stay in a steered offer.
	fastShare = 0.8
	// noiseMargin is the measured gain a steer needs: scores within it
	// of the client's choice are the timing's noise, not a gain. Two
	// back-to-back packetScores of the six default ciphers on the 2-core
	// benchmark machine under load 25 agreed within 0.91-1.09x over 90
	// pairs (docs/benchmarks.md, "Cipher selection"), so a ratio of two
	// scores moves by up to 1.2x; AES-GCM with AES-NI against
	// ChaCha20-Poly1305 measures 3.3x.
	noiseMargin = 1.3
	// kexInitWait bounds how long a measured server waits for the
	// KEXINIT of a client known to send it first (kexInitFirst) before
	// sending its full one.
	kexInitWait = 250 * time.Millisecond
)

// kexInitFirst are the software versions (RFC 4253 §4.2, the start of the
// softwareversion field) of clients that send their KEXINIT without
// waiting for the server's. A measured server waits for the KEXINIT of
// these only; any other client gets the full KEXINIT at once, as under
// "client", and its first re-exchange is steered.
var kexInitFirst = []string{
	"OpenSSH_", "Go", "paramiko_", "PuTTY_", "AsyncSSH_", "libssh2_", "libssh_", "ssh2js",
}

// sendsKexInitFirst reports whether the client that sent version line v
// (without CR LF) is known to send its KEXINIT first.
func sendsKexInitFirst(v []byte) bool {
	rest, ok := bytes.CutPrefix(v, []byte("SSH-2.0-"))
	if !ok {
		return false
	}
	for _, p := range kexInitFirst {
		if bytes.HasPrefix(rest, []byte(p)) {
			return true
		}
	}
	return false
}

func checkSelection(s string) (string, error) {
	switch s {
	case "", SelectionClient:
		return SelectionClient, nil
	case SelectionMeasured:
		return s, nil
	}
	return "", fmt.Errorf("transport: unknown CipherSelection %q (client, measured)", s)
}

// bulkPrimitive is the registry algorithm whose speed stands for c.
func (c *cipherSpec) bulkPrimitive() string {
	switch {
	case c.aead != "":
		return c.aead
	case c.keyStream != "":
		return "chacha20-poly1305" // the catalog's AEAD of the same construction
	case c.block != "":
		return c.block
	}
	return c.stream
}

// cipherScores scores each offered cipher: with a calibrator, the MB/s
// of sealing packets with it as the transport assembles it from the
// registry's chosen providers (packetScores); without one, a guess from
// the providers alone: the harmonic combination of its primitives, 2 for
// a primitive served by CPU instructions or hardware and 1 for portable
// code.
func cipherScores(reg *provider.Registry, ciphers []string) map[string]float64 {
	if reg.Calibrator() != nil {
		return packetScores(reg, ciphers)
	}
	out := map[string]float64{}
	for _, name := range ciphers {
		c := findCipher(name)
		prims := []string{c.bulkPrimitive()}
		if !c.macBuiltIn {
			prims = append(prims, "hmac-sha256")
		}
		out[name] = combinedScore(reg, prims)
	}
	return out
}

// combinedScore is the throughput of running every primitive over the
// same data: the harmonic combination of their scores.
func combinedScore(reg *provider.Registry, prims []string) float64 {
	inv := 0.0
	for _, p := range prims {
		s := primitiveScore(reg, p)
		if s <= 0 {
			return 0
		}
		inv += 1 / s
	}
	return 1 / inv
}

func primitiveScore(reg *provider.Registry, prim string) float64 {
	ex, err := reg.Explain(prim)
	if err != nil {
		return 0
	}
	for _, c := range ex.Candidates {
		if c.Provider == ex.Chosen && c.Kind != provider.KindSoftware {
			return 2
		}
	}
	return 1
}

// selectCiphers is the measured offer for a client that lists client,
// and why it steers ("" when it does not): the ciphers of offer it
// accepts that score within fastShare of the best of them and above the
// client's own choice by more than noiseMargin, in offer order. offer
// itself, which leaves the client's order to pick, when the client
// accepts none of it, when its choice is not measured (score 0) or when
// no accepted cipher beats that choice by more than the noise.
func selectCiphers(offer, client []string, scores map[string]float64) ([]string, string) {
	first, ok := choose(client, offer)
	if !ok || scores[first] <= 0 {
		return offer, ""
	}
	floor := scores[first] * noiseMargin
	var out []string
	best := 0.0
	for _, c := range offer {
		if slices.Contains(client, c) {
			best = max(best, scores[c])
		}
	}
	if best <= floor {
		return offer, ""
	}
	for _, c := range offer {
		if s := scores[c]; slices.Contains(client, c) && s >= fastShare*best && s > floor {
			out = append(out, c)
		}
	}
	picked, _ := choose(client, out)
	return out, fmt.Sprintf("cipher %s steered from %s: measured %.1fx", picked, first, scores[picked]/scores[first])
}

// cipherOfferLocked is what our next KEXINIT lists for direction dir
// (0 client to server, 1 server to client), chosen from the client's list
// for that direction. A resumed connection has not seen the client's
// KEXINIT: a re-exchange it starts offers the cipher in use, which the
// client accepted, so that the client's own order does not undo the
// measured choice. c.wmu must be held.
func (c *Conn) cipherOfferLocked(dir int) []string {
	c.steered[dir] = ""
	switch {
	case c.srv.selection != SelectionMeasured:
		return c.srv.offer.ciphers
	case c.clientCiphers[dir] != nil:
		var offer []string
		offer, c.steered[dir] = selectCiphers(c.srv.offer.ciphers, c.clientCiphers[dir], c.srv.scores)
		return offer
	case c.kexCount > 0:
		if inUse := c.cipherInUseLocked(dir); inUse != "" && slices.Contains(c.srv.offer.ciphers, inUse) {
			return []string{inUse}
		}
	}
	return c.srv.offer.ciphers
}

// cipherInUseLocked is the name of direction dir's current cipher.
func (c *Conn) cipherInUseLocked(dir int) string {
	k := c.wr.keyed
	if dir == 0 {
		k = c.rd.keyed
	}
	if k.cipher == nil {
		return ""
	}
	return k.cipher.name
}

// waitForClientKexInit arms the fallback of a measured first exchange:
// our full KEXINIT goes out if the client's has not come in time.
func (c *Conn) waitForClientKexInit() {
	c.kexInitTimer = time.AfterFunc(c.srv.kexInitWait, func() {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		if c.kexCount == 0 {
			c.sendKexInitLocked()
		}
	})
}
