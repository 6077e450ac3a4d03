package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/uri"
	"golang.org/x/crypto/ssh"
	"golang.org/x/term"
)

// migrateOptions are the flags of `offload keys migrate`.
type migrateOptions struct {
	dir    string // OpenSSH's host keys (ssh_host_TYPE_key)
	types  string // comma-separated: ed25519, ecdsa, rsa
	config string // append the configuration lines here ("": print them)
	scan   bool   // also ssh-keyscan a temporary offload sshd serving the token's keys
}

// migratedKey is one host key moved into the token.
type migratedKey struct {
	typ, file, object, uri string
	pub                    ssh.PublicKey // the file's
}

// rollbackFromToken says which host key types Debian 12's OpenSSH (9.2)
// can serve from a PKCS #11 token, through ssh-agent (ssh-add -s) and
// sshd's HostKeyAgent: RSA and ECDSA; not Ed25519 (its PKCS #11 support
// came in later OpenSSH releases).
var rollbackFromToken = map[string]bool{"rsa": true, "ecdsa": true, "ed25519": false}

// keysMigrate is `offload keys migrate`: OpenSSH's host keys into the
// token u names, each as object ssh_host_TYPE_key; the token's public
// keys compared with the files' (and, with -scan, what a server serving
// them shows ssh-keyscan); then the sshd_config lines. The files stay:
// they are the way back to OpenSSH (docs/migration.md).
func keysMigrate(ctx context.Context, p *pkcs11.Provider, u *uri.URI, o migrateOptions, module, pinSource string, stdout, stderr io.Writer) error {
	if u.Object != "" || u.ID != nil {
		return usagef("keys migrate takes a token URI (no object= or id=): it names the objects ssh_host_TYPE_key itself")
	}
	module = firstNonEmpty(u.ModulePath, u.ModuleName, module)
	pinSource = firstNonEmpty(u.PINSource, pinSource)
	if pinSource == "" {
		return usagef("keys migrate needs a PIN file (pin-source= in the URI, or -pin-source): the configuration it writes names it")
	}
	var keys []migratedKey
	for _, t := range strings.Split(o.types, ",") {
		k, err := migrateOne(ctx, p, u, strings.TrimSpace(t), o.dir, stderr)
		if err != nil {
			return err
		}
		if k != nil {
			keys = append(keys, *k)
		}
	}
	if len(keys) == 0 {
		return fmt.Errorf("no host keys in %s (ssh_host_{%s}_key)", o.dir, o.types)
	}
	if o.scan {
		if err := scanCompare(ctx, keys, module, pinSource, stderr); err != nil {
			return err
		}
	}
	lines := migrateConfig(keys, module, pinSource, o.dir)
	if o.config == "" {
		_, err := io.WriteString(stdout, lines)
		return err
	}
	f, err := os.OpenFile(o.config, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, lines)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		fmt.Fprintf(stderr, "appended the HostKey and PKCS11 lines to %s\n", o.config)
	}
	return err
}

// migrateOne imports DIR/ssh_host_TYPE_key (nil when there is none) and
// checks the token's public key is the file's.
func migrateOne(ctx context.Context, p *pkcs11.Provider, tok *uri.URI, typ, dir string, stderr io.Writer) (*migratedKey, error) {
	if _, ok := rollbackFromToken[typ]; !ok {
		return nil, usagef("unknown key type %q (ed25519, ecdsa, rsa)", typ)
	}
	file := filepath.Join(dir, "ssh_host_"+typ+"_key")
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "%s: none, skipped\n", file)
		return nil, nil
	}
	key, err := readPrivateKey(file, stderr)
	if err != nil {
		return nil, err
	}
	pub, err := publicOf(key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := checkPubFile(file+".pub", pub); err != nil {
		return nil, err
	}
	k := &migratedKey{typ: typ, file: file, object: "ssh_host_" + typ + "_key", pub: pub}
	ref := tok.Clone()
	ref.Object = k.object
	ref.Type = ""
	short := ref.Clone()
	short.ModulePath, short.ModuleName, short.PINSource, short.PINValue = "", "", "", ""
	k.uri = short.String()
	if have, err := p.PublicKey(ctx, ref.Full()); err == nil {
		if !samePublic(have, pub) {
			return nil, fmt.Errorf("the token already has an object %s with another key; delete it or choose another token", k.object)
		}
		fmt.Fprintf(stderr, "%s: already in the token as %s\n", file, k.uri)
	} else {
		s, err := p.Import(ctx, ref.Full(), key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if err := checkSigns(s); err != nil {
			return nil, fmt.Errorf("the token's copy of %s does not sign correctly: %w", file, err)
		}
	}
	have, err := p.PublicKey(ctx, ref.Full())
	if err != nil {
		return nil, err
	}
	if !samePublic(have, pub) {
		return nil, fmt.Errorf("the token's %s is not the key of %s", k.object, file)
	}
	fmt.Fprintf(stderr, "%s: %s in the token as %s, same fingerprint\n", file, ssh.FingerprintSHA256(pub), k.uri)
	return k, nil
}

func publicOf(key crypto.PrivateKey) (ssh.PublicKey, error) {
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported key %T", key)
	}
	return ssh.NewPublicKey(s.Public())
}

// checkPubFile: FILE.pub, when there is one, holds the private key's
// public half (what clients have in known_hosts).
func checkPubFile(file string, pub ssh.PublicKey) error {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	k, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if !bytes.Equal(k.Marshal(), pub.Marshal()) {
		return fmt.Errorf("%s is not the public half of %s", file, strings.TrimSuffix(file, ".pub"))
	}
	return nil
}

func samePublic(a crypto.PublicKey, b ssh.PublicKey) bool {
	k, err := ssh.NewPublicKey(a)
	return err == nil && bytes.Equal(k.Marshal(), b.Marshal())
}

// migrateConfig is the configuration for /etc/offload/sshd_config.
func migrateConfig(keys []migratedKey, module, pinSource, dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Host keys imported from %s by offload keys migrate (the files stay: the way back to OpenSSH)\n", dir)
	for _, k := range keys {
		fmt.Fprintf(&b, "HostKey %s\n", k.uri)
	}
	fmt.Fprintf(&b, "PKCS11Module %s\nPKCS11PinSource %s\n", module, pinSource)
	return b.String()
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// warnNoRollback warns, before keys import -remove deletes file, when the
// key's type is one Debian 12's OpenSSH cannot serve from a token: after
// that, going back to OpenSSH changes this host key. On a terminal it
// asks to go on; otherwise (a script) it warns and goes on.
func warnNoRollback(key crypto.PrivateKey, file string, stderr io.Writer) error {
	pub, err := publicOf(key)
	if err != nil {
		return nil // readPrivateKey's caller reports unsupported keys
	}
	typ := map[string]string{ssh.KeyAlgoED25519: "ed25519", ssh.KeyAlgoRSA: "rsa",
		ssh.KeyAlgoECDSA256: "ecdsa", ssh.KeyAlgoECDSA384: "ecdsa", ssh.KeyAlgoECDSA521: "ecdsa"}[pub.Type()]
	if rollbackFromToken[typ] {
		return nil
	}
	fmt.Fprintf(stderr, "warning: -remove deletes %s, and Debian 12's OpenSSH (9.2) cannot serve a %s host key from a token\n"+
		"(ssh-agent's PKCS #11 support takes RSA and ECDSA keys only): going back to OpenSSH would then change\n"+
		"this host key (%s) and every client would see a host key mismatch. Keep the file (no -remove)\n"+
		"to keep that way back; docs/migration.md.\n", file, pub.Type(), ssh.FingerprintSHA256(pub))
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return nil
	}
	fmt.Fprint(stderr, "remove it anyway? [y/N] ")
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return errors.New("not imported: -remove not confirmed")
	}
	return nil
}
