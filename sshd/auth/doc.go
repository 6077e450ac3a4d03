// Package auth is offload's SSH user authentication layer (RFC 4252): it
// runs after the first key exchange, over a wire.PacketConn, and returns
// the perm.Permissions of the login for the connection layer.
//
// # Conversation and decision
//
// The package is cut in two so that the parsing of a hostile client's
// messages and the decisions about accounts can run in different
// processes. Serve runs the conversation: it parses and answers the
// messages and keeps the protocol's bounds. An Authority makes every
// decision: Begin is told the user of the first request, Decide answers
// each request (Failure with the methods that can continue, KeyOK,
// Success with the login's perm.Permissions, Disconnect, or InfoRequest
// for keyboard-interactive, whose responses go to Responder.Respond). NewAuthority
// is the in-process Authority: it verifies signatures over the session
// identifier it is given, reads the user's files and applies the policy
// below, and it does not trust the conversation: it pins the user itself
// and bounds the requests it answers. Run is Serve with NewAuthority, in
// one process. Under privilege separation (the offload sshd process
// model) the pre-auth worker runs Serve with an Authority that asks the
// monitor, and the monitor runs NewAuthority.
//
// Run answers SSH_MSG_SERVICE_REQUEST "ssh-userauth" with SERVICE_ACCEPT
// and then SSH_MSG_USERAUTH_REQUEST messages until one succeeds. The user
// and service ("ssh-connection") are fixed by the first request; a change
// disconnects. Config.Banner is sent as SSH_MSG_USERAUTH_BANNER before the
// first answer. Unknown users and users refused by policy (OnlyUser,
// AllowUsers, PermitRootLogin no) get the same answers as real users, so
// that clients cannot probe which accounts exist; the log says why.
//
// # Methods
//
//   - none: always a failure listing the enabled methods.
//   - publickey: a query without signature gets SSH_MSG_USERAUTH_PK_OK
//     only when the key would be accepted (a PK_OK is never
//     authentication); a signed request must carry a signature whose
//     format matches the algorithm (rsa-sha2-256/512 for ssh-rsa keys;
//     SHA-1 "ssh-rsa" is refused by default) over this session's
//     identifier and the request. RSA keys need MinRSABits.
//   - publickey-hostbound-v00@openssh.com (OpenSSH's PROTOCOL 3.1): the
//     publickey method with the server host key of the first key
//     exchange named in the request and covered by the signature, so a
//     signature made through a forwarded agent is bound to this host.
//     Served when NewConnAuthority is told that key (ConnInfo.HostKey); it counts
//     as publickey for AuthenticationMethods and in the logs.
//   - password: off by default (PasswordAuthentication). Checked by
//     Config.PasswordCallback when set, else by PAM's auth stack with
//     UsePAM, else against the shadow entry (yescrypt, SHA-512, SHA-256
//     through libcrypt; see package account). Empty passwords need
//     PermitEmptyPasswords; password change requests and passwords that
//     are not UTF-8 fail. Without PAM an expired password (chage -d 0, or
//     past its maximum age) logs in restricted to changing it, as OpenSSH
//     does: a forced passwd(1) on a pty and no forwarding.
//   - keyboard-interactive (RFC 4256): off by default
//     (KbdInteractiveAuthentication). With UsePAM every PAM prompt is an
//     SSH_MSG_USERAUTH_INFO_REQUEST (texts shown before a prompt lead its
//     text) and the account stack and, for an expired password, the
//     password change run in the same dialog, bounded by
//     Config.LoginGraceTime. Without PAM it asks "Password: " and checks
//     it as the password method does (OpenSSH without PAM has no
//     keyboard-interactive device on Linux). A response to no prompt, a
//     wrong number of responses (at most MaxPrompts) or a response longer
//     than MaxResponseLen disconnects; a new request abandons the round.
//
// # Accounts
//
// Before any method, the account policy of package account applies, as
// OpenSSH's allowed_user: without PAM, an expired (chage -E 0) or locked
// (usermod -L) account is refused; a missing or non-executable shell is
// refused (unless SkipShellCheck); then DenyUsers, AllowUsers,
// DenyGroups, AllowGroups. A refused user is answered like an invalid
// one. With UsePAM, PAM's account stack runs after the last method of
// every login (publickey too); a refusal shows PAM's messages as a
// banner and disconnects (OpenSSH closes the connection), and
// PAM_NEW_AUTHTOK_REQD restricts the login to a password change.
// Failures last at least account.FailDelay (5 ms and a per-user amount,
// doubled while exceeded), as in OpenSSH.
//
// # AuthenticationMethods
//
// With Config.AuthenticationMethods a login needs every method of one
// list, in order; a method that completes a step but not a list answers
// FAILURE with partial success and the methods that may come next. The
// same key cannot complete two publickey steps. The restrictions of
// every step apply to the login, and perm.Permissions.Method lists the
// methods ("publickey,password").
//
// # Logs
//
// Decisions are logged in OpenSSH's words ("Accepted publickey for U from
// A port P ssh2: ED25519 SHA256:…", "Failed password for invalid user U
// from …", "Invalid user U from A port P", "User U from A not allowed
// because listed in DenyUsers", "maximum authentication attempts
// exceeded for …", certificates with their ID, serial and CA), at INFO
// where OpenSSH logs at INFO and Debug where it logs at VERBOSE, with
// the client's address, port, user and method as attributes.
//
// # authorized_keys
//
// AuthorizedKeysCommand's output is read as more lines after the files
// (as the AuthorizedKeysCommandUser, with OpenSSH's % tokens), and
// AuthorizedPrincipalsCommand's as more principals after
// AuthorizedPrincipalsFile; see Config.
//
// Files come from Config.AuthorizedKeysFiles (default
// ~/.ssh/authorized_keys; %h, %u, %U and %% tokens). Each line is parsed
// with ssh.ParseAuthorizedKey; the options are interpreted here: from=
// (address, CIDR or wildcard patterns with ! negation, matched against the
// client address, no DNS), command=, environment= (only with
// PermitUserEnvironment), permitopen=, permitlisten= ([host:]port, a bare
// port meaning any host), expiry-time= (YYYYMMDD[HHMM[SS]] in
// local time, or UTC with a trailing Z), no-pty, no-port-forwarding,
// no-agent-forwarding, no-X11-forwarding, no-user-rc, restrict and the
// re-enabling pty, port-forwarding, agent-forwarding, X11-forwarding,
// user-rc, cert-authority with principals=, verify-required and
// no-touch-required (for security keys, whose signatures offload verifies
// itself so that their user-presence and user-verification flags are
// checked against these options). A line with
// any other option (tunnel=, ...) is ignored and logged:
// offload fails closed rather than dropping a restriction. Lines whose
// from= or expiry-time= refuse the connection do not stop the search.
//
// # Certificates
//
// OpenSSH user certificates are accepted when signed by a CA listed in
// Config.TrustedUserCAKeys (the principal must be the user name, or one
// listed in AuthorizedPrincipalsFile) or by a cert-authority line (the
// user name, or one of principals=). ssh.CertChecker checks the CA
// signature and validity; the critical options force-command,
// source-address and verify-required are enforced and any other refuses
// the certificate. Missing permit-* extensions become the No* fields of
// perm.Permissions.
//
// Config.RevokedKeys is an OpenSSH KRL (package krl: explicit keys,
// SHA-1/SHA-256 fingerprints, certificate serials, ranges, bitmaps and key
// IDs per CA or for any CA) or a list of public keys (a listed key,
// certificate key or CA is refused). A file that cannot be read or
// parsed refuses every key, as in OpenSSH.
//
// # Files
//
// authorized_keys and principals files are read up to MaxFileSize; longer
// lines than MaxLineLength are skipped. Unless Config.IgnoreFileModes is
// set (StrictModes no), the file and each directory from it up to the home
// directory (or /) must be owned by root or the user and not writable by
// group or others; otherwise the file is ignored and logged. Files are
// read afresh on every request.
//
// # Differences from OpenSSH
//
// No DNS: from= and AllowUsers host patterns match addresses only (as
// with UseDNS no). Not implemented: password changes in the password
// method, signed KRLs (refused, as by OpenSSH 9.4 and later).
// AuthorizedKeysCommand and AuthorizedPrincipalsCommand are bounded in
// time (CommandTimeout) and output (MaxFileSize), which OpenSSH's are not,
// and run with only PATH in their environment. PAM prompts are one per round (see package pam).
// A PAM account refusal sends SSH_MSG_DISCONNECT where OpenSSH just
// closes the connection. tunnel=
// lines are refused (see above). Unknown users are answered like real
// ones, but skip the file reads and the password callback.
//
// # Failures and disconnects
//
// Failed attempts (every request except the first "none" and acceptable
// PK_OK queries) count against MaxAuthTries; reaching it disconnects with
// SSH_DISCONNECT_NO_MORE_AUTH_METHODS_AVAILABLE, as does exceeding ten
// times as many requests of any kind. Malformed or out-of-order messages
// disconnect with SSH_DISCONNECT_PROTOCOL_ERROR, a foreign service with
// SERVICE_NOT_AVAILABLE and an unusable user name with ILLEGAL_USER_NAME.
// Run sends the SSH_MSG_DISCONNECT itself when the PacketConn is a
// wire.Disconnector and returns a *DisconnectError; the caller closes the
// connection. LoginGraceTime is the caller's deadline on the connection;
// cancelling the context passed to Run closes the PacketConn.
package auth
