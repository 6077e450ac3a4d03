// Package pam runs PAM (Pluggable Authentication Modules) transactions for
// offload's SSH server: authentication for the password and
// keyboard-interactive methods, account management for every method, and
// the session (environment from pam_env, limits from pam_limits, the audit
// login uid from pam_loginuid, the message of the day from pam_motd).
//
// # Build
//
// The binding uses cgo against libpam (github.com/msteinert/pam/v2) and is
// built with the tags `cgo && !nopam`; on Debian it needs libpam0g-dev. In
// any other build Start returns ErrUnavailable, whose text says how to get
// a build with PAM.
//
// # Conversations
//
// PAM modules ask their questions through a Conversation: a function that
// gets one Message (a prompt with or without echo, an error or an
// informational text) and returns the response. Every operation that may
// converse takes the Conversation and a context: a conversation after the
// context ends (LoginGraceTime) fails, and so does a response longer than
// Config.MaxResponseLen or a conversation of more than Config.MaxMessages
// messages in one operation — the module then sees PAM_CONV_ERR and the
// operation fails; nothing waits forever on a client.
//
// A monitor that answers for a remote, less privileged process uses a
// Dialog: it runs the operation in its own goroutine and turns the
// conversation into Rounds (the texts shown so far and one prompt) that
// are sent out and answered later, which is how keyboard-interactive
// (RFC 4256) INFO_REQUEST/INFO_RESPONSE pairs are made.
//
// # Sessions and processes
//
// A Handle has no global state; it may be used from any process, one
// goroutine at a time. OpenSession must run in the process whose limits
// and audit login uid the user's processes inherit: pam_limits changes the
// calling process's limits, and pam_loginuid writes /proc/self/loginuid,
// which the kernel accepts only from the process's main thread. Call
// OpenSession from a goroutine locked to the main thread
// (runtime.LockOSThread from an init function of package main) and start
// the user's process from that same goroutine. OpenSession also keeps Go's
// runtime from resetting RLIMIT_NOFILE in children to the value the
// process started with, which would undo pam_limits' nofile.
//
// # Differences from OpenSSH
//
// OpenSSH groups the prompts of one PAM conversation call into one
// INFO_REQUEST; the binding asks one message at a time, so each prompt is
// its own round (Linux-PAM's modules ask one question per call).
package pam
