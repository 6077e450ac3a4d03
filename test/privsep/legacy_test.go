package privsep

import (
	"strings"
	"testing"
)

// TestLegacyAlgorithmsSeparated: with privilege separation, a SHA-1 key
// exchange (the monitor signs a 20-byte exchange hash) and a CBC cipher
// with an SHA-1 MAC (handed from the pre-auth worker to the post-auth
// process mid-chain) serve a session, once enabled as OpenSSH enables
// them.
func TestLegacyAlgorithmsSeparated(t *testing.T) {
	d := startDaemon(t, nil, "KexAlgorithms +diffie-hellman-group14-sha1", "Ciphers +aes128-cbc", "MACs +hmac-sha1")
	a := newAccount(t)
	out := d.mustSSH(a, "echo legacy-ok", "KexAlgorithms=diffie-hellman-group14-sha1", "Ciphers=aes128-cbc", "MACs=hmac-sha1")
	if strings.TrimSpace(out) != "legacy-ok" {
		t.Fatalf("output %q", out)
	}
}
