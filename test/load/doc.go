// Package load puts an in-process offload SSH server under many
// concurrent sessions and under connection storms.
//
// # Sessions
//
// TestConcurrentSessions logs in N clients (golang.org/x/crypto/ssh) and
// holds them all open at once; each runs a small exec and a transfer
// through `cat` whose SHA-256 is compared. N is 500 by default and 100
// under -short (CI runs -short with -race); OFFLOAD_LOAD=1 forces 500.
// Every session must succeed, and afterwards goroutines return to the
// baseline (±5) and the heap to roughly where it was.
//
// # Storms
//
// TestMaxStartups fills the MaxStartups slots with silent clients and
// checks that further connections are dropped until LoginGraceTime
// frees them. TestConnectionStorm opens many connections at once against
// a small MaxStartups while a healthy session transfers: drops happen,
// the server survives, the healthy session's data is intact and logins
// after the storm succeed.
//
// TestPreAuthMemory measures the heap an unauthenticated connection
// holds, which MaxStartups multiplies.
//
// These are not benchmarks: they assert behaviour, never speed.
package load
