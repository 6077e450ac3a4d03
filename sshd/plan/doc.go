// Package plan is the separated server's resolved plan: what the monitor
// decides once and hands its children, so that they construct their
// transport from it and never decide anything themselves.
//
// # What a plan holds
//
// The algorithm lists the server negotiates, the transport settings
// (rekeying, compression, cipher selection and its scores, host public
// keys and certificates and where each host key lives, the version
// string, the moduli file), and for each registry primitive the SSH
// algorithms are built from, per stage of a connection (the pre-auth
// workers before the login, the post-auth processes after it), which
// provider serves it and where it runs: in the child, with the child's
// own instance of that provider, or in the monitor, reached through it
// (a token only the monitor holds).
//
// # Resolving and constructing
//
// The monitor resolves the plan from its one registry (Resolve), where
// calibration, the CPU mask, the policy, pins and deny list apply. A
// child builds its transport configuration and registry from the plan
// (Build): it registers only the providers the plan names and pins each
// primitive to its planned provider. offload sshd -T prints the plan the
// monitor sends (Print).
//
// # Encoding
//
// A plan travels as a versioned binary message (Marshal, Parse) inside
// the child's configuration; the decoder bounds every field.
package plan
