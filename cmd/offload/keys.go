package main

import (
	"context"
	"crypto"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/uri"
	"github.com/offload/offload/sshd/config"
	"golang.org/x/crypto/ssh"
	"golang.org/x/term"
)

// moduleEnv names the module when neither the URI nor -module does.
const moduleEnv = "OFFLOAD_PKCS11_MODULE"

const keysUsage = `usage: offload keys COMMAND [flags] ...

commands:
  generate -type TYPE URI   make a key pair on the token (TYPE: ed25519, ecdsa-p256,
                            ecdsa-p384, rsa-2048, rsa-3072, rsa-4096)
  list URI                  list the key pairs on the token(s) the URI selects
  pub [-known-hosts HOST] URI
                            print the public key as an authorized_keys (or known_hosts) line
  import [-remove] FILE URI store an OpenSSH or PKCS #8 private key on the token,
                            sensitive and not extractable; -remove then deletes FILE
  delete URI                destroy the key pair (and certificates with its id)
  migrate [-dir DIR] [-types LIST] [-config FILE] [-scan] TOKEN-URI
                            import OpenSSH's host keys (DIR, default /etc/ssh) into the
                            token, check their fingerprints are unchanged (-scan: also
                            with ssh-keyscan) and print (or append to FILE) the config
                            lines; the files stay (docs/migration.md)

Each command also takes -module PATH and -pin-source FILE.
URI is an RFC 7512 pkcs11: URI, e.g.
  'pkcs11:token=unit0;object=host-key?module-name=softhsm2&pin-source=/etc/offload/pin'
The module comes from the URI (module-path, module-name), -module or $` + moduleEnv + `.
The PIN comes from the URI (pin-source), -pin-source, $` + pkcs11.PINEnv + `, or a prompt
on the terminal; it is never echoed, logged or printed.
`

// keysCommands are the sub-commands of `offload keys`, as keysUsage and
// the summary in main.go name them.
var keysCommands = []string{"generate", "list", "pub", "import", "delete", "migrate"}

// cmdKeys is `offload keys`: key pairs on PKCS #11 tokens.
func cmdKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, keysUsage)
		if len(args) == 0 {
			return usagef("no keys command given")
		}
		return nil
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("keys "+sub, stderr)
	fs.Usage = func() { fmt.Fprint(stderr, keysUsage) }
	module := fs.String("module", os.Getenv(moduleEnv), "PKCS #11 module path or name (default: from the URI, or $"+moduleEnv+")")
	pinSource := fs.String("pin-source", "", "file holding the user PIN (default: from the URI, $"+pkcs11.PINEnv+", or a prompt)")
	var keyType, knownHost string
	var remove bool
	mig := migrateOptions{}
	switch sub {
	case "migrate":
		fs.StringVar(&mig.dir, "dir", "/etc/ssh", "directory of OpenSSH's host keys (ssh_host_TYPE_key)")
		fs.StringVar(&mig.types, "types", "ed25519,ecdsa,rsa", "key types to migrate")
		fs.StringVar(&mig.config, "config", "", "append the HostKey and PKCS11 lines to this file instead of printing them")
		fs.BoolVar(&mig.scan, "scan", false, "also run ssh-keyscan against a temporary offload sshd serving the token's keys")
	case "generate":
		fs.StringVar(&keyType, "type", "", "key type: ed25519, ecdsa-p256, ecdsa-p384, rsa-2048, rsa-3072, rsa-4096")
	case "pub":
		fs.StringVar(&knownHost, "known-hosts", "", "print a known_hosts line for this host name instead")
	case "import":
		fs.BoolVar(&remove, "remove", false, "delete the key file once the token holds the key and has signed with it")
	case "list", "delete":
	default:
		fmt.Fprint(stderr, keysUsage)
		return usagef("unknown keys command %q", sub)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	want := 1
	if sub == "import" {
		want = 2
	}
	if fs.NArg() != want {
		return usagef("keys %s takes %d argument(s), got %d (see offload keys -h)", sub, want, fs.NArg())
	}
	ref := fs.Arg(want - 1)
	u, err := uri.Parse(ref)
	if err != nil {
		return usagef("%v", err)
	}
	var kt pkcs11.KeyType
	if sub == "generate" {
		if keyType == "" {
			return usagef("keys generate needs -type")
		}
		if kt, err = pkcs11.ParseKeyType(keyType); err != nil {
			return usagef("%v", err)
		}
	}
	// A PIN the token refuses is recorded where offload sshd records it,
	// so neither sends it again.
	cfg := pkcs11.Config{PINSource: *pinSource, HealthInterval: -1, PINPrompt: promptPIN(stderr),
		StateDir: pinStateDir(&config.Config{})}
	if u.Module() == "" {
		if *module == "" {
			return usagef("no PKCS #11 module: add module-path= or module-name= to the URI, or pass -module")
		}
		cfg.ModulePath = *module
	}
	p, err := pkcs11.OpenURI(ref, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	switch sub {
	case "generate":
		return keysGenerate(ctx, p, u, kt, stdout)
	case "list":
		return keysList(ctx, p, u, stdout)
	case "pub":
		return keysPub(ctx, p, u, knownHost, stdout)
	case "import":
		return keysImport(ctx, p, u, fs.Arg(0), remove, stdout, stderr)
	case "migrate":
		return keysMigrate(ctx, p, u, mig, *module, *pinSource, stdout, stderr)
	}
	return keysDelete(ctx, p, u, stdout)
}

// promptPIN asks on the terminal, without echo, when stdin is one.
func promptPIN(stderr io.Writer) func(token string) (string, error) {
	return func(token string) (string, error) {
		fd := int(os.Stdin.Fd())
		if !term.IsTerminal(fd) {
			return "", fmt.Errorf("none given and no terminal to ask on: give pin-source in the URI, -pin-source or $%s", pkcs11.PINEnv)
		}
		fmt.Fprintf(stderr, "PIN for token %q: ", token)
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(stderr)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
}

func keysGenerate(ctx context.Context, p *pkcs11.Provider, u *uri.URI, kt pkcs11.KeyType, stdout io.Writer) error {
	s, err := p.Generate(ctx, u.Full(), kt)
	if err != nil {
		return err
	}
	return printKey(stdout, s.Public(), keyURI(s, u), "")
}

// keyURI is the URI naming exactly the key s (from the signer when it can
// say, else the URI asked for without its query).
func keyURI(s crypto.Signer, u *uri.URI) string {
	if n, ok := s.(interface{ URI() string }); ok {
		return n.URI()
	}
	c := u.Clone()
	c.ModulePath, c.ModuleName, c.PINSource, c.PINValue = "", "", "", ""
	return c.String()
}

// printKey prints the key's URI as a comment line and its public key as an
// authorized_keys line (or, with host, a known_hosts line).
func printKey(w io.Writer, pub crypto.PublicKey, keyRef, host string) error {
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return fmt.Errorf("public key: %w", err)
	}
	line := strings.TrimSuffix(string(ssh.MarshalAuthorizedKey(sp)), "\n")
	if host != "" {
		_, err = fmt.Fprintf(w, "%s %s\n", host, line)
		return err
	}
	_, err = fmt.Fprintf(w, "%s %s\n", line, keyRef)
	return err
}

func keysList(ctx context.Context, p *pkcs11.Provider, u *uri.URI, stdout io.Writer) error {
	keys, err := p.List(ctx, u.Full())
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOKEN\tTYPE\tFINGERPRINT\tURI")
	for _, k := range keys {
		fp := "-"
		if sp, err := ssh.NewPublicKey(k.Public); err == nil {
			fp = ssh.FingerprintSHA256(sp)
		}
		typ := string(k.Type)
		if typ == "" {
			typ = "unsupported"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Token, typ, fp, k.URI)
	}
	return tw.Flush()
}

func keysPub(ctx context.Context, p *pkcs11.Provider, u *uri.URI, host string, stdout io.Writer) error {
	pub, err := p.PublicKey(ctx, u.Full())
	if err != nil {
		return err
	}
	c := u.Clone()
	c.ModulePath, c.ModuleName, c.PINSource, c.PINValue = "", "", "", ""
	return printKey(stdout, pub, c.String(), host)
}

func keysImport(ctx context.Context, p *pkcs11.Provider, u *uri.URI, file string, remove bool, stdout, stderr io.Writer) error {
	key, err := readPrivateKey(file, stderr)
	if err != nil {
		return err
	}
	if remove {
		if err := warnNoRollback(key, file, stderr); err != nil {
			return err
		}
	}
	s, err := p.Import(ctx, u.Full(), key)
	if err != nil {
		return err
	}
	// Prove the token holds the key before anything is removed.
	if err := checkSigns(s); err != nil {
		return fmt.Errorf("the token's copy of %s does not sign correctly: %w (the file was left in place)", file, err)
	}
	if remove {
		if err := shred(file); err != nil {
			return fmt.Errorf("key stored on the token, but %s could not be removed: %w", file, err)
		}
		fmt.Fprintf(stderr, "removed %s: only the token holds the key now\n", file)
	} else {
		fmt.Fprintf(stderr, "the token holds the key (not extractable); %s still does too: delete it, or use -remove\n", file)
	}
	return printKey(stdout, s.Public(), keyURI(s, u), "")
}

// readPrivateKey parses an OpenSSH, PKCS #8, PKCS #1 or SEC 1 PEM key,
// asking for the passphrase on the terminal when it is encrypted.
func readPrivateKey(file string, stderr io.Writer) (crypto.PrivateKey, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	key, err := ssh.ParseRawPrivateKey(b)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		fd := int(os.Stdin.Fd())
		if !term.IsTerminal(fd) {
			return nil, fmt.Errorf("%s is encrypted and there is no terminal to ask for its passphrase", file)
		}
		fmt.Fprintf(stderr, "passphrase for %s: ", file)
		pass, perr := term.ReadPassword(fd)
		fmt.Fprintln(stderr)
		if perr != nil {
			return nil, perr
		}
		key, err = ssh.ParseRawPrivateKeyWithPassphrase(b, pass)
		clear(pass)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return key, nil
}

// checkSigns signs a digest with s and verifies it with s's public key.
func checkSigns(s crypto.Signer) error {
	sp, err := ssh.NewSignerFromSigner(s)
	if err != nil {
		return err
	}
	msg := make([]byte, 32)
	rand.Read(msg)
	sig, err := sp.Sign(rand.Reader, msg)
	if err != nil {
		return err
	}
	return sp.PublicKey().Verify(msg, sig)
}

// shred overwrites a file with zeros before removing it.
func shred(file string) error {
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err == nil {
		_, err = f.Write(make([]byte, st.Size()))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Remove(file)
}

func keysDelete(ctx context.Context, p *pkcs11.Provider, u *uri.URI, stdout io.Writer) error {
	pub, err := p.PublicKey(ctx, u.Full())
	if err != nil {
		return err
	}
	n, err := p.Delete(ctx, u.Full())
	if err != nil {
		return err
	}
	fp := ""
	if sp, err := ssh.NewPublicKey(pub); err == nil {
		fp = " " + ssh.FingerprintSHA256(sp)
	}
	_, err = fmt.Fprintf(stdout, "deleted %d objects of key%s\n", n, fp)
	return err
}
