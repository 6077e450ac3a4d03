package transport

import (
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

// TestSelectCiphersRule: the decision rule of a measured offer, case by
// case: a steer needs the client's choice measured and beaten by more
// than noiseMargin, and lists only ciphers that beat it by that much.
func TestSelectCiphersRule(t *testing.T) {
	const (
		chacha = "chacha20-poly1305@openssh.com"
		gcm128 = "aes128-gcm@openssh.com"
		gcm256 = "aes256-gcm@openssh.com"
		ctr    = "aes128-ctr"
	)
	offer := []string{chacha, gcm128, gcm256, ctr}
	openssh := []string{chacha, ctr, gcm128, gcm256}
	for _, tc := range []struct {
		name   string
		client []string
		scores map[string]float64
		want   []string // nil: the full offer, the client's order stands
		note   string
	}{
		{"gain", openssh, map[string]float64{chacha: 1000, gcm128: 2100, gcm256: 1900, ctr: 700},
			[]string{gcm128, gcm256}, "cipher aes128-gcm@openssh.com steered from chacha20-poly1305@openssh.com: measured 2.1x"},
		{"within noise", openssh, map[string]float64{chacha: 1000, gcm128: 1250, gcm256: 1200}, nil, ""},
		{"noise floor binds", openssh, map[string]float64{chacha: 1000, gcm128: 1400, gcm256: 1200},
			[]string{gcm128}, "cipher aes128-gcm@openssh.com steered from chacha20-poly1305@openssh.com: measured 1.4x"},
		{"client's choice not measured", openssh, map[string]float64{gcm128: 2000, gcm256: 1900}, nil, ""},
		{"one cipher (ssh -c)", []string{chacha}, map[string]float64{chacha: 1000, gcm128: 2000}, nil, ""},
		{"client's choice fastest", []string{gcm128, chacha}, map[string]float64{chacha: 1000, gcm128: 2000}, nil, ""},
		{"slower ciphers only", openssh, map[string]float64{chacha: 2000, gcm128: 1000, gcm256: 900, ctr: 500}, nil, ""},
		{"nothing in common", []string{"3des-cbc"}, map[string]float64{chacha: 1000, gcm128: 2000}, nil, ""},
		{"no scores", openssh, nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, note := selectCiphers(offer, tc.client, tc.scores)
			want := tc.want
			if want == nil {
				want = offer
			}
			if !slices.Equal(got, want) || note != tc.note {
				t.Errorf("got %v %q, want %v %q", got, note, want, tc.note)
			}
		})
	}
}

// TestSelectCiphersNeverSlower: over random scores and client orders, the
// cipher the client ends up with is its own choice, or one measured
// faster than it by more than noiseMargin; and it always has one.
func TestSelectCiphersNeverSlower(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	offer := DefaultCiphers()
	for i := 0; i < 5000; i++ {
		client := slices.Clone(offer)
		r.Shuffle(len(client), func(a, b int) { client[a], client[b] = client[b], client[a] })
		client = client[:1+r.IntN(len(client))]
		scores := map[string]float64{}
		for _, c := range offer {
			if r.IntN(8) > 0 {
				scores[c] = float64(1 + r.IntN(3000))
			}
		}
		got, note := selectCiphers(offer, client, scores)
		own, _ := choose(client, offer)
		picked, ok := choose(client, got)
		if !ok {
			t.Fatalf("client %v, scores %v: offer %v has nothing in common", client, scores, got)
		}
		if picked != own && scores[picked] <= noiseMargin*scores[own] {
			t.Fatalf("client %v, scores %v: steered to %s (%v) from %s (%v)", client, scores, picked, scores[picked], own, scores[own])
		}
		if (picked != own) != (note != "") || (note != "" && !strings.Contains(note, picked)) {
			t.Fatalf("picked %s (own %s) with note %q", picked, own, note)
		}
	}
}

// TestSendsKexInitFirst: the clients a measured server waits for.
func TestSendsKexInitFirst(t *testing.T) {
	for v, want := range map[string]bool{
		"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3": true, "SSH-2.0-Go": true, "SSH-2.0-paramiko_3.4.0": true,
		"SSH-2.0-PuTTY_Release_0.78": true, "SSH-2.0-libssh2_1.10.0": true,
		"SSH-2.0-dropbear_2022.83": false, "SSH-2.0-raw": false, "SSH-1.99-OpenSSH_9.2": false, "": false,
	} {
		if got := sendsKexInitFirst([]byte(v)); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}

// TestSteeredProvenance: the line of a steered key exchange says, per
// direction, which cipher the client was steered to, from which, and by
// what measured gain; a client on its own choice gets no such words.
func TestSteeredProvenance(t *testing.T) {
	scores := map[string]float64{"chacha20-poly1305@openssh.com": 1000, "aes128-gcm@openssh.com": 2000}
	for _, tc := range []struct {
		ciphers []string
		want    string
	}{
		{[]string{"chacha20-poly1305@openssh.com", "aes128-gcm@openssh.com"}, `cipher_in_steered="cipher aes128-gcm@openssh.com steered from chacha20-poly1305@openssh.com: measured 2.0x" cipher_out_steered="cipher aes128-gcm@openssh.com steered from chacha20-poly1305@openssh.com: measured 2.0x"`},
		{[]string{"chacha20-poly1305@openssh.com"}, ""},
	} {
		var logs logBuffer
		// x/crypto's client sends its KEXINIT first; the server waits for it
		// as long as it takes (the 250 ms fallback is TestMeasuredSelectionServer's)
		ts := newTestServer(t, &Config{CipherSelection: SelectionMeasured, CipherScores: scores,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))}, func(s *Server) { s.kexInitWait = time.Hour })
		cfg := clientConfig("curve25519-sha256", "", "", "")
		cfg.Ciphers = tc.ciphers
		c, _ := ts.dial(t, cfg)
		c.Close()
		var line string
		testenv.WaitUntil(t, func() bool {
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "key exchange done") {
					line = l
				}
			}
			return line != ""
		})
		if line == "" || !strings.Contains(line, tc.want) || (tc.want == "" && strings.Contains(line, "steered")) {
			t.Errorf("client ciphers %v: want %q in the key exchange line: %s", tc.ciphers, tc.want, line)
		}
	}
}
