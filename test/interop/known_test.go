package interop_test

// known is a cell that fails today for a known reason. The failure's
// detail (client output and server log) must contain reason; an op that
// passes while marked fails the test.
type known struct {
	client, cell, op string // exact, or "*" for any
	issue            string // why, and where the fix is tracked
	reason           string
}

// knownFailures are the marks, each with the exact failure it expects.
var knownFailures = []known{
	{client: "curl", cell: "defaults", op: "*",
		issue:  "issue 17: libssh2 1.10's CTR ciphers need hmac-sha2-256/512 (non-EtM), which offload's defaults leave out",
		reason: `err="transport: disconnect (local, key exchange failed): no common MAC"`},
	{client: "curl", cell: "user key rsa", op: "*",
		issue:  "by design: libssh2 1.10 signs with RSA only as ssh-rsa (SHA-1), refused as by OpenSSH 8.8 and later",
		reason: `why="auth: public key algorithm \"ssh-rsa\" not accepted"`},
	{client: "openssh", cell: "defaults", op: "post-quantum kex",
		issue:  "issue 17: offload has no sntrup761x25519-sha512, the only post-quantum key exchange of OpenSSH 8.5-9.8",
		reason: "negotiated curve25519-sha256, though the client offers sntrup761x25519-sha512"},
	{client: "git", cell: "defaults", op: "post-quantum kex",
		issue:  "issue 17: no sntrup761x25519-sha512 (git uses the OpenSSH client)",
		reason: "negotiated curve25519-sha256, though the client offers sntrup761x25519-sha512"},
	{client: "rsync", cell: "defaults", op: "post-quantum kex",
		issue:  "issue 17: no sntrup761x25519-sha512 (rsync uses the OpenSSH client)",
		reason: "negotiated curve25519-sha256, though the client offers sntrup761x25519-sha512"},
	{client: "lftp", cell: "defaults", op: "post-quantum kex",
		issue:  "issue 17: no sntrup761x25519-sha512 (lftp uses the OpenSSH client)",
		reason: "negotiated curve25519-sha256, though the client offers sntrup761x25519-sha512"},
}

func lookupKnown(client, cell, op string) *known {
	for i := range knownFailures {
		k := &knownFailures[i]
		if match(k.client, client) && match(k.cell, cell) && match(k.op, op) {
			return k
		}
	}
	return nil
}

// match: "*" matches anything, other patterns themselves.
func match(pattern, s string) bool { return pattern == "*" || pattern == s }
