package transport

import (
	"runtime"
	"time"

	"github.com/offload/offload/provider"
)

// How a measured server times its ciphers: sealing packets of
// scorePacket bytes, every cipher in turn for scoreSlice of its thread's
// CPU time (threadCPU: time spent waiting for a CPU is not counted),
// scoreRounds times; a cipher's score is its best round. What load still
// does (a preempted slice's cold caches) only slows a round, so the best
// of interleaved rounds is what the cipher can do (about 130 ms of CPU for
// the six default ciphers).
const (
	scorePacket = 32 << 10
	scoreSlice  = 3 * time.Millisecond
	scoreRounds = 7
	// scoreMAC is the MAC a cipher without its own is timed with (the
	// first of DefaultMACs).
	scoreMAC = "hmac-sha2-256-etm@openssh.com"
)

// packetScores returns MB/s (10^6 bytes) of sealing with each of ciphers
// as the transport assembles it from reg; a cipher that cannot be
// assembled scores 0 (not measured).
func packetScores(reg *provider.Registry, ciphers []string) map[string]float64 {
	out := map[string]float64{}
	var pcs []packetCipher
	var names []string
	for _, name := range ciphers {
		out[name] = 0
		if pc := scoreCipher(reg, name); pc != nil {
			pcs, names = append(pcs, pc), append(names, name)
		}
	}
	buf := make([]byte, 4+scorePacket, 4+scorePacket+64)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range scoreRounds {
		for i, pc := range pcs {
			out[names[i]] = max(out[names[i]], sealRate(pc, buf))
		}
	}
	for _, pc := range pcs {
		pc.Close()
	}
	return out
}

// scoreCipher assembles name with zero keys, or returns nil.
func scoreCipher(reg *provider.Registry, name string) packetCipher {
	cs := findCipher(name)
	if cs == nil {
		return nil
	}
	var ms *macSpec
	k := directionKeys{iv: make([]byte, cs.ivSize), key: make([]byte, cs.keySize)}
	if !cs.macBuiltIn {
		ms = findMAC(scoreMAC)
		k.macKey = make([]byte, ms.keySize)
	}
	pc, err := newPacketCipher(reg, cs, ms, k)
	if err != nil {
		return nil
	}
	return pc
}

// sealRate seals buf's packet with pc for scoreSlice and returns MB/s.
func sealRate(pc packetCipher, buf []byte) float64 {
	n, seq := 0, uint32(0)
	start := threadCPU()
	for threadCPU()-start < scoreSlice {
		pc.seal(seq, buf[:len(buf):cap(buf)])
		n++
		seq++
	}
	return float64(n*scorePacket) / (threadCPU() - start).Seconds() / 1e6
}
