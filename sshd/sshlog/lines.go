package sshlog

import (
	"fmt"
	"net/netip"
	"strings"
)

// Peer is who a connection line is about, as OpenSSH names it.
type Peer struct {
	Addr netip.Addr
	Port uint16
	User string // "" before the first userauth request
	// Authenticated is set after a login; InvalidUser when User may not
	// log in (unknown or refused by the account policy).
	Authenticated, InvalidUser bool
}

// String is OpenSSH's connection id: "authenticating user U A port P",
// "invalid user U A port P", "user U A port P" or "A port P".
func (p Peer) String() string {
	who := ""
	switch {
	case p.User == "":
	case p.Authenticated:
		who = "user " + p.User + " "
	case p.InvalidUser:
		who = "invalid user " + p.User + " "
	default:
		who = "authenticating user " + p.User + " "
	}
	return fmt.Sprintf("%s%s port %d", who, p.Addr, p.Port)
}

func preauth(p Peer) string {
	if p.Authenticated {
		return ""
	}
	return " [preauth]"
}

// ConnectionClosed is the line for a peer that closed the connection
// ("Connection closed by authenticating user U A port P [preauth]").
func ConnectionClosed(p Peer) string { return "Connection closed by " + p.String() + preauth(p) }

// Disconnected is the line for the end of a connection after the peer's
// SSH_MSG_DISCONNECT ("Disconnected from user U A port P").
func Disconnected(p Peer) string { return "Disconnected from " + p.String() + preauth(p) }

// ReceivedDisconnect is the line for the peer's SSH_MSG_DISCONNECT
// ("Received disconnect from A port P:11: disconnected by user").
func ReceivedDisconnect(p Peer, reason uint32, msg string) string {
	return fmt.Sprintf("Received disconnect from %s port %d:%d: %s%s", p.Addr, p.Port, reason, msg, preauth(p))
}

// TooManyFailures is the line for MaxAuthTries reached ("Disconnecting
// invalid user U A port P: Too many authentication failures [preauth]").
func TooManyFailures(p Peer) string {
	return "Disconnecting " + p.String() + ": Too many authentication failures" + preauth(p)
}

// PreauthMark is the marker OpenSSH's monitor puts after each line its
// unprivileged pre-authentication child sends it.
const PreauthMark = " [preauth]"

// MarkPreauth is a line a pre-auth worker sent, as the monitor logs it:
// ending in exactly one PreauthMark, whatever the worker wrote, so that a
// worker cannot pass a line off as the monitor's ("Accepted publickey
// for root from …" without the mark).
func MarkPreauth(msg string) string {
	for strings.HasSuffix(msg, PreauthMark) {
		msg = strings.TrimSuffix(msg, PreauthMark)
	}
	return msg + PreauthMark
}
