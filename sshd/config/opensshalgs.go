package config

// Every algorithm name OpenSSH 10 knows (and Debian's GSSAPI key
// exchanges, and names of 9.x that 10 dropped), per list: names in a
// configuration that offload does not implement but OpenSSH does are left
// out with a warning; other names are errors. This is OpenSSH's catalogue,
// not offload's (that is sshd/transport's table).
var (
	opensshCiphers = []string{"3des-cbc", "aes128-cbc", "aes192-cbc", "aes256-cbc", "aes128-ctr", "aes192-ctr",
		"aes256-ctr", "aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
		"blowfish-cbc", "cast128-cbc", "arcfour", "arcfour128", "arcfour256", "rijndael-cbc@lysator.liu.se"}
	opensshMACs = []string{"hmac-sha1", "hmac-sha1-96", "hmac-sha2-256", "hmac-sha2-512", "hmac-md5", "hmac-md5-96",
		"umac-64@openssh.com", "umac-128@openssh.com", "hmac-sha1-etm@openssh.com", "hmac-sha1-96-etm@openssh.com",
		"hmac-sha2-256-etm@openssh.com", "hmac-sha2-512-etm@openssh.com", "hmac-md5-etm@openssh.com",
		"hmac-md5-96-etm@openssh.com", "umac-64-etm@openssh.com", "umac-128-etm@openssh.com",
		"hmac-ripemd160", "hmac-ripemd160@openssh.com", "hmac-ripemd160-etm@openssh.com"}
	opensshKex = []string{"diffie-hellman-group1-sha1", "diffie-hellman-group14-sha1", "diffie-hellman-group14-sha256",
		"diffie-hellman-group16-sha512", "diffie-hellman-group18-sha512", "diffie-hellman-group-exchange-sha1",
		"diffie-hellman-group-exchange-sha256", "ecdh-sha2-nistp256", "ecdh-sha2-nistp384", "ecdh-sha2-nistp521",
		"curve25519-sha256", "curve25519-sha256@libssh.org", "sntrup761x25519-sha512",
		"sntrup761x25519-sha512@openssh.com", "mlkem768x25519-sha256", "mlkem768nistp256-sha256",
		// Debian's GSSAPI key exchanges.
		"gss-gex-sha1-", "gss-group1-sha1-", "gss-group14-sha1-", "gss-group14-sha256-", "gss-group16-sha512-",
		"gss-nistp256-sha256-", "gss-curve25519-sha256-"}
	opensshKeyTypes = []string{"ssh-ed25519", "ssh-ed25519-cert-v01@openssh.com", "sk-ssh-ed25519@openssh.com",
		"sk-ssh-ed25519-cert-v01@openssh.com", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256-cert-v01@openssh.com",
		"ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384-cert-v01@openssh.com", "ecdsa-sha2-nistp521",
		"ecdsa-sha2-nistp521-cert-v01@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com",
		"sk-ecdsa-sha2-nistp256-cert-v01@openssh.com", "webauthn-sk-ecdsa-sha2-nistp256@openssh.com",
		"webauthn-sk-ecdsa-sha2-nistp256-cert-v01@openssh.com", "rsa-sha2-512", "rsa-sha2-512-cert-v01@openssh.com",
		"rsa-sha2-256", "rsa-sha2-256-cert-v01@openssh.com", "ssh-rsa", "ssh-rsa-cert-v01@openssh.com",
		"ssh-mldsa44-ed25519@openssh.com", "ssh-mldsa44-ed25519-cert-v01@openssh.com",
		"ssh-dss", "ssh-dss-cert-v01@openssh.com"}
	// opensshDefaultKeyTypes is OpenSSH 10's default key type list
	// (KEX_DEFAULT_PK_ALG), the default of HostbasedAcceptedAlgorithms.
	opensshDefaultKeyTypes = []string{"ssh-ed25519-cert-v01@openssh.com", "ecdsa-sha2-nistp256-cert-v01@openssh.com",
		"ecdsa-sha2-nistp384-cert-v01@openssh.com", "ecdsa-sha2-nistp521-cert-v01@openssh.com",
		"sk-ssh-ed25519-cert-v01@openssh.com", "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
		"rsa-sha2-512-cert-v01@openssh.com", "rsa-sha2-256-cert-v01@openssh.com", "ssh-ed25519",
		"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com",
		"sk-ecdsa-sha2-nistp256@openssh.com", "rsa-sha2-512", "rsa-sha2-256"}
)
