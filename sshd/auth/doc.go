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
// Success with the login's perm.Permissions, or Disconnect). NewAuthority
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
//   - password: off by default; Config.PasswordCallback decides.
//
// # authorized_keys
//
// Files come from Config.AuthorizedKeysFiles (default
// ~/.ssh/authorized_keys; %h, %u, %U and %% tokens). Each line is parsed
// with ssh.ParseAuthorizedKey; the options are interpreted here: from=
// (address, CIDR or wildcard patterns with ! negation, matched against the
// client address, no DNS), command=, environment= (only with
// PermitUserEnvironment), permitopen=, expiry-time= (YYYYMMDD[HHMM[SS]] in
// local time, or UTC with a trailing Z), no-pty, no-port-forwarding,
// no-agent-forwarding, no-X11-forwarding, no-user-rc, restrict and the
// re-enabling pty, port-forwarding, agent-forwarding, X11-forwarding,
// user-rc, cert-authority with principals=, verify-required and
// no-touch-required (for security keys, whose signatures offload verifies
// itself so that their user-presence and user-verification flags are
// checked against these options). A line with
// any other option (permitlisten=, tunnel=, ...) is ignored and logged:
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
// Keys, certificate keys and CAs listed in Config.RevokedKeys are refused.
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
// with UseDNS no). Not implemented: AuthorizedKeysCommand,
// AuthorizedPrincipalsCommand, binary KRLs, keyboard-interactive, password
// changes, multi-method AuthenticationMethods. permitlisten= and tunnel=
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
