// Package ipc is the typed, bounded interface between the processes of
// offload sshd: the privileged monitor, the pre-auth workers and the
// post-auth processes. It is messages only: it imports the standard
// library, golang.org/x/sys, sshd/wire and internal/rawio, and nothing
// that gives the messages their meaning (a test enforces the list).
//
// # Transport
//
// A Peer is one end of a unix SOCK_SEQPACKET socket pair (Pair): one
// message per datagram, up to MaxMessage bytes of payload, with at most
// one descriptor riding along (a client's socket). Either end may send
// requests (Call) and notifications (Notify); replies are matched by id.
// Descriptors arrive close-on-exec; a message with more than one, a
// truncated message and a reply to a request never made end the
// connection with a ProtocolError.
//
// # Messages
//
// Each message type has a plain struct with Marshal and a Parse
// function, in one encoding: SSH wire types (sshd/wire), every field
// bounded, trailing bytes refused. The monitor trusts nothing a child
// sends: every decoder of the child-to-monitor direction (SignRequest,
// DecideRequest, RespondRequest, HandoffRequest, ConnDone, Log, Metrics,
// the AEAD calls) has a fuzz target, and so do the others. The first
// message a child gets, TypeConfig, is a ChildConfig carrying the encoded
// plan (sshd/plan) the child constructs its transport from. An Adopt
// carries the login's permissions, the connection's settings and its
// transport state in the binary forms of the packages that own them
// (perm.Permissions, connection.Config and transport.State, each
// MarshalBinary, bounded and fuzzed there).
//
// # Meaning
//
// The structs are ipc's own: sshd/preauth and sshd/monitor convert the
// authentication messages from and to sshd/auth's types, and the
// monitor's services reach a child through sshd/remote (the host-key
// signer, the AEADs of a token, the metrics reporter).
package ipc
