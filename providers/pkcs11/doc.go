// Package pkcs11 is offload's PKCS #11 provider: signing keys that live in
// tokens (HSMs, smart cards, SoftHSM, a network HSM's client module) as
// crypto.Signer, AES-GCM on the token for bulk work, and ECDH with
// ephemeral keys on the token, all handed out through provider.Registry.
//
// # Opening
//
// Open takes a Config naming the module (a path, or a bare name resolved as
// RFC 7512's module-name is) and the tokens to use, as pkcs11: URIs
// (package uri). Tokens are matched by their attributes before any login,
// so no PIN is spent on the wrong token; each is then logged in once.
// OpenURI opens the one token a URI names. The module is initialized once
// per process however many providers use it, and finalized by the last
// Close (or left alone when another library initialized it first).
//
// # Sessions
//
// Each token has a bounded session pool (Config.MaxSessions, or a URI's
// max-sessions) with a wait timeout. A signature borrows a session for one
// call; an AEAD holds one for its life and returns it on Close
// (provider.Release), and AEADs are spread over the tokens that offer the
// mechanism, least used first. When an AEAD's calls overlap (a
// pipelining SSH connection), it takes more sessions, up to
// Config.AEADLanes, on the least busy tokens (a provider.FanOut, each
// lane with its own recovery), so one transfer uses every unit. AEADs
// never wait for a session and leave the last one of a pool to
// signatures, so connections holding AEADs cannot make a host-key
// signature wait; extra lanes leave a quarter of the pool to other
// connections.
//
// # Keys
//
// Signer opens the private key a URI names by id and/or label: none, or
// several, is an error naming what was asked. Generate, Import, List,
// Delete and PublicKey manage key pairs (`offload keys` is built on them);
// keys are stored sensitive and not extractable. Signers implement
// crypto.Signer and crypto.MessageSigner for Ed25519 (CKM_EDDSA), ECDSA
// P-256/P-384 (ASN.1 out of the token's r‖s) and RSA PKCS #1 v1.5 and PSS
// (from *rsa.PSSOptions), which is what crypto/tls and
// golang.org/x/crypto/ssh.NewSignerFromSigner need.
//
// # Faults
//
// Return values are classified (Class): a lost session is replaced, a lost
// login redone, a stale object handle re-found (and the key checked to be
// the same key by its public half), a lost token reattached by rescanning
// the module's slots and, if need be, reinitializing the module, with
// backoff; a health probe does the same in the background. A refused PIN is
// never sent again. A key whose token is lost moves to the token's failover
// token (Config.Failover or the URI's failover-token) when one holds the
// same key, and otherwise fails closed: there is no software fallback for
// a key that lives in a token. A key on several peer tokens (Config.Peers,
// the URI's peer-token) signs on the least busy of them and skips one that
// fails; each copy is checked to be the same key before it signs. Bulk AES-GCM moves its key to another session
// or token and, as a last resort, finishes the connection in Go with the
// same key (unless Config.NoFallback); new AEADs and key agreements simply
// fail, and the registry falls through to the CPU or software provider.
//
// # Lifecycle and contexts
//
// Every method that may reach the module counts itself in flight. Close
// refuses new calls (ErrClosed, which is provider.ErrClosed), ends pool
// waits and backoffs, waits up to Config.CloseTimeout for the calls in
// flight and only then finalizes the module, so nothing ever calls into a
// finalized module; a module stuck in a call is left initialized and
// Close says so. Signer, List, Generate, Import, Delete, PublicKey,
// OpenContext and NewKeyAgreementContext honour their context for the
// pool wait, the retries and recovery (a call already running in the
// module cannot be interrupted). Sign and key agreements, which have no
// context, are bounded by Config.Deadline; signers offer SignContext.
//
// # Tokens that are not there
//
// With Config.AllowMissing a token that is absent, failing or refuses its
// PIN does not fail Open: it is pending (Pending, Health), its keys fail
// closed with ErrTokenUnavailable, and the health probe attaches it when
// it appears and tells the registry (provider.ChangeNotifier). A token
// that was never there is ErrNotFound; one that went away or is pending
// is ErrTokenUnavailable.
//
// # PINs
//
// A PIN a token refused is never sent again until its source changes: the
// refusal is recorded in memory and, with Config.StateDir, in a marker
// file that later processes (a restart, `offload sshd -t`) read. A PIN
// file is recognised by its identity (path, device, inode, size and
// modification time), a PIN given as a value by a 16-bit keyed tag, so
// the state directory never holds the PIN or enough to recover it. A
// provider opened while another in the process keeps the token logged in
// with a different PIN is refused without sending the new one.
//
// # Fault injection
//
// Config.Faults takes an injector from this module's internal package
// pkcs11faults, through which the provider then calls the module: chosen
// calls fail with a CKR_* value or answer late, so that this module's
// tests watch the recovery above without a device being pulled. Outside
// the module the field can only be nil, which costs nothing.
//
// # Builds without cgo
//
// The provider needs cgo. Built without it (or with the nopkcs11 tag), Open
// returns ErrNotBuilt; package uri and the types here still work.
package pkcs11
