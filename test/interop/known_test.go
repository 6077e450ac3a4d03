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
	{client: "curl", cell: "user key rsa", op: "*",
		issue:  "by design: libssh2 1.10 signs with RSA only as ssh-rsa (SHA-1), refused as by OpenSSH 8.8 and later",
		reason: `why="auth: public key algorithm \"ssh-rsa\" not accepted"`},
	{client: "putty", cell: "kex diffie-hellman-group1-sha1", op: "*",
		issue:  "by design: PuTTY puts the 1024-bit group 1 below its default warning threshold and, in batch mode, does not go on",
		reason: "Cannot confirm a weak crypto primitive in batch mode"},
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
