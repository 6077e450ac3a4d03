// Package account makes the account decisions OpenSSH's sshd makes
// without PAM, from the passwd and shadow databases: which accounts may
// try to log in at all (lock, expiry, shell, AllowUsers, DenyUsers,
// AllowGroups, DenyGroups), whether a password is right, whether it has
// expired, /etc/nologin, and how long a failure takes.
//
// # Accounts
//
// Files.Lookup reads /etc/passwd and /etc/shadow (or other files); it
// reads only files, so accounts from other NSS sources are not found.
// Entries are bounded in size and parsed strictly; a malformed entry is a
// *ParseError.
//
// # Policy
//
// Policy.Allowed is OpenSSH's allowed_user, in its order: without PAM an
// account whose shadow expiry day has passed or whose password field
// starts with "!" (usermod -L) is refused, as OpenSSH on Linux does
// ("*" and "*LK*" only make password authentication fail, as there);
// a login shell that does not exist or is not executable is refused
// unless a ChrootDirectory applies (/etc/shells is not consulted, as in
// OpenSSH; PAM's pam_shells does that where configured); then DenyUsers,
// AllowUsers, DenyGroups, AllowGroups. Each *Refusal carries the lines
// OpenSSH logs for it.
//
// CheckPasswordExpiry is OpenSSH's check at password authentication: a
// password changed on day 0 (chage -d 0) or older than its maximum age
// is expired, and OpenSSH then lets the login in restricted to changing
// it. Nologin is the session-start check (root exempt).
//
// # Passwords
//
// VerifyPassword hashes with libcrypt's crypt_r (libxcrypt on Debian:
// yescrypt "$y$", SHA-512 "$6$", SHA-256 "$5$", bcrypt and the rest it
// knows); it needs cgo and is built with `cgo && !nocrypt`, otherwise it
// fails with ErrNoCrypt. Invalid users cost a hash too. FailDelay and
// WaitMinimum make failures last as long as OpenSSH makes them: at least
// 5 ms plus a per-user amount, doubled while exceeded.
package account
