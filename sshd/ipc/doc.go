// Package ipc is the typed, bounded interface between the processes of
// offload sshd: the privileged monitor, the pre-auth workers and the
// post-auth processes.
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
// Each message type has a struct with Marshal and a Parse function. The
// monitor trusts nothing a child sends: every decoder of the
// child-to-monitor direction (SignRequest, DecideRequest,
// HandoffRequest, ConnDone, Log) bounds each field, refuses trailing bytes
// and has a fuzz target. The first message a child gets, TypeConfig, is a
// binary ChildConfig carrying the encoded plan (sshd/plan) the child
// constructs its transport from; the connection settings of Adopt still
// travel as JSON.
package ipc
