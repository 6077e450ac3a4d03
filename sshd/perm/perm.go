// Package perm carries what user authentication decided about a login to
// the connection layer: who logged in and the restrictions that came with
// the key (authorized_keys options) or certificate (critical options and
// extensions).
package perm

// Permissions is the outcome of a successful user authentication. The
// zero value is an unrestricted login of nobody; auth always sets User.
type Permissions struct {
	User   string // the account name the client authenticated as
	Method string // "publickey", "password", ...
	// KeyFingerprint is the SHA256 fingerprint of the key (or of the
	// certificate's key) that authenticated, for logs.
	KeyFingerprint string

	// ForceCommand replaces any command the client asks for
	// (authorized_keys command=, certificate force-command).
	ForceCommand string
	// Environment holds NAME=value pairs from authorized_keys environment=.
	Environment []string
	// PermitOpen, when not nil, lists the host:port targets direct-tcpip
	// may reach (authorized_keys permitopen=); nil means any.
	PermitOpen []string
	// PermitListen, when not nil, lists the "[host:]port" entries
	// tcpip-forward may listen on (authorized_keys permitlisten=); nil
	// means any.
	PermitListen []string

	NoPTY             bool
	NoPortForwarding  bool
	NoAgentForwarding bool
	NoX11Forwarding   bool
	NoUserRC          bool

	// AuthInfo lists the methods that succeeded for this login, in order,
	// one line each as OpenSSH's ExposeAuthInfo writes them: the method
	// ("password", "keyboard-interactive/pam"), and for publickey the key
	// in authorized_keys form ("publickey ssh-ed25519 AAAA...").
	AuthInfo []string `json:",omitempty"`
}
