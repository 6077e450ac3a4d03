// Package penalty implements OpenSSH's PerSourcePenalties,
// PerSourcePenaltyExemptList, PerSourceNetBlockSize and
// PerSourceMaxStartups with OpenSSH 10's defaults and semantics.
//
// # Penalties
//
// A connection that ends badly penalises its source network (the client
// address cut to PerSourceNetBlockSize bits, 32:128 by default): a crash
// of its pre-auth process 90s, leaving after failed authentication 5s,
// authentication by an invalid user 5s, leaving without attempting
// authentication 1s, exceeding LoginGraceTime 10s, a RefuseConnection
// refusal 10s. Penalties of one network add up to max (10m); the network
// is refused only while more than min (15s) is outstanding, so a few
// mistakes cost nothing. A refused client gets RefusalText and the log
// gets DropLine. Each address family tracks up to max-sources (65536)
// networks; when full, "permissive" forgets the penalties that expire
// soonest and "deny-all" refuses every source that is not exempt.
//
// # Startups
//
// PerSourceMaxStartups bounds the unauthenticated connections one network
// holds at once (none by default): Admit returns a Slot, released when the
// connection authenticates or ends.
//
// # Use
//
// The listener calls Tracker.Admit for every accepted connection and
// refuses it on error; the process that learns how a connection ended
// calls Classify on its Outcome and Penalize. ParsePenalties and
// ParseNetBlockSize read the sshd_config arguments.
package penalty
