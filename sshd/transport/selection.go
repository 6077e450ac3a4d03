package transport

import (
	"fmt"
	"slices"
	"time"

	"github.com/offload/offload/provider"
)

// Cipher selection (Config.CipherSelection). The client's order picks the
// cipher among those both sides list (RFC 4253 §7.1), so a server's order
// changes nothing. What a server can do is choose what it lists after
// seeing the client's KEXINIT: with "measured" it waits for it and offers
// only the ciphers the client accepts that measure fast here (within
// fastShare of the fastest), never fewer than one the client lists.
const (
	SelectionClient   = "client"
	SelectionMeasured = "measured"

	// fastShare is how close to the fastest accepted cipher another must
	// measure to stay in a measured offer.
	fastShare = 0.8
	// kexInitWait bounds how long a measured server waits for the
	// client's KEXINIT before sending its full one (a client that waits
	// for the server's first).
	kexInitWait = 250 * time.Millisecond
)

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

// cipherScores measures the primitives behind each offered cipher: the
// registry's calibrated throughput where it has a calibrator (a CTR
// cipher with HMAC-SHA-256, both passes over the data), and otherwise 2
// for a primitive served by CPU instructions or hardware and 1 for
// portable code.
func cipherScores(reg *provider.Registry, ciphers []string) map[string]float64 {
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
	if reg.Calibrator() != nil {
		if m, err := reg.Measure(prim); err == nil && m.Score() > 0 {
			return m.Score()
		}
	}
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

// selectCiphers is the measured offer for a client that lists client:
// the ciphers of offer it accepts that score within fastShare of the
// best of them, in offer order; offer itself when it accepts none.
func selectCiphers(offer, client []string, scores map[string]float64) []string {
	var accepted []string
	best := 0.0
	for _, c := range offer {
		if slices.Contains(client, c) {
			accepted = append(accepted, c)
			best = max(best, scores[c])
		}
	}
	if len(accepted) == 0 || best == 0 {
		return offer
	}
	return slices.DeleteFunc(accepted, func(c string) bool { return scores[c] < fastShare*best })
}

// cipherOfferLocked is what our next KEXINIT lists for direction dir
// (0 client to server, 1 server to client), chosen from the client's list
// for that direction. A resumed connection has not seen the client's
// KEXINIT: a re-exchange it starts offers the cipher in use, which the
// client accepted, so that the client's own order does not undo the
// measured choice. c.wmu must be held.
func (c *Conn) cipherOfferLocked(dir int) []string {
	switch {
	case c.srv.selection != SelectionMeasured:
		return c.srv.offer.ciphers
	case c.clientCiphers[dir] != nil:
		return selectCiphers(c.srv.offer.ciphers, c.clientCiphers[dir], c.srv.scores)
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
	c.kexInitTimer = time.AfterFunc(kexInitWait, func() {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		if c.kexCount == 0 {
			c.sendKexInitLocked()
		}
	})
}
