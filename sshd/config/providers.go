package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// checkPKCS11URI parses a pkcs11: URI (RFC 7512) without loading any
// module; the provider opens the token and key later (offload sshd -t
// does).
func checkPKCS11URI(s string) error {
	if _, err := uri.Parse(s); err != nil {
		return err
	}
	return nil
}

// checkProviderURI parses a pin's or deny entry's provider when it is a
// pkcs11: URI, so that a misspelt attribute (which would select or deny
// no token) fails when the file is read rather than when the registry is
// built.
func checkProviderURI(spec string) error {
	if !uri.IsURI(spec) {
		return nil
	}
	return checkPKCS11URI(spec)
}

func pkcs11TokenKW() *keyword {
	return &keyword{name: "PKCS11Token", minArgs: 1, maxArgs: 1, repeat: accumulate,
		set: func(c *Config, a []string) error {
			if err := checkPKCS11URI(a[0]); err != nil {
				return err
			}
			c.PKCS11Tokens = appendNew(c.PKCS11Tokens, a[0])
			return checkCount(len(c.PKCS11Tokens), maxTokens, "PKCS11Token lines")
		},
		def:   func(c *Config) { c.PKCS11Tokens = nil },
		print: eachLine(func(c *Config) []string { return redactAll(c.PKCS11Tokens) })}
}

// pkcs11EnvKW is PKCS11Environment NAME=VALUE: a variable set for the
// module before it is loaded (SoftHSM's SOFTHSM2_CONF, a network HSM
// client's configuration), so that the configuration file alone says how
// to reach the token. Repeatable; a name given twice keeps its first value.
func pkcs11EnvKW() *keyword {
	return &keyword{name: "PKCS11Environment", minArgs: 1, maxArgs: 1, repeat: accumulate,
		set: func(c *Config, a []string) error {
			name, _, ok := strings.Cut(a[0], "=")
			if !ok || name == "" || strings.ContainsAny(name, " \t") {
				return fmt.Errorf("want NAME=VALUE, got %q", a[0])
			}
			for _, e := range c.PKCS11Env {
				if n, _, _ := strings.Cut(e, "="); n == name {
					return nil
				}
			}
			c.PKCS11Env = append(c.PKCS11Env, a[0])
			return checkCount(len(c.PKCS11Env), maxTokens, "PKCS11Environment lines")
		},
		def:   func(c *Config) { c.PKCS11Env = nil },
		print: eachLine(func(c *Config) []string { return c.PKCS11Env })}
}

// pkcs11StateDirKW is PKCS11StateDir DIR|none|default: where the PKCS #11
// provider records PINs its tokens refused, so that no later start sends
// them again (default: /var/lib/offload as root, else
// $XDG_STATE_HOME/offload; none: memory only).
func pkcs11StateDirKW() *keyword {
	return &keyword{name: "PKCS11StateDir", minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) error {
			switch {
			case a[0] == "":
				return errors.New("empty path")
			case strings.EqualFold(a[0], "default"):
				c.PKCS11StateDir = ""
			case strings.EqualFold(a[0], "none"):
				c.PKCS11StateDir = "none"
			default:
				c.PKCS11StateDir = a[0]
			}
			return nil
		},
		def:   func(c *Config) { c.PKCS11StateDir = "" },
		print: func(c *Config) [][]string { return [][]string{{defaultIfEmpty(c.PKCS11StateDir)}} }}
}

func cryptoPolicyKW() *keyword {
	return &keyword{name: "CryptoPolicy", minArgs: 1, maxArgs: 1,
		set:   func(c *Config, a []string) (err error) { c.CryptoPolicy, err = provider.ParseMode(a[0]); return err },
		def:   func(c *Config) { c.CryptoPolicy = 0 },
		print: func(c *Config) [][]string { return [][]string{{c.CryptoPolicy.String()}} }}
}

func providerMapKW() *keyword {
	return &keyword{name: "ProviderMap", minArgs: 1, maxArgs: -1, repeat: accumulate, set: setProviderMap,
		def: func(c *Config) { c.ProviderMap = nil }, print: printProviderMap}
}

func providerDenyKW() *keyword {
	return &keyword{name: "ProviderDeny", minArgs: 1, maxArgs: -1, repeat: accumulate, set: setProviderDeny,
		def: func(c *Config) { c.ProviderDeny = nil }, print: printProviderDeny}
}

func redactAll(refs []string) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = provider.RedactRef(r)
	}
	return out
}

// setProviderMap merges pins; an algorithm pinned on an earlier line keeps
// its first pin, as a single-valued keyword would.
func setProviderMap(c *Config, a []string) error {
	pins, err := provider.ParsePins(strings.Join(a, " "))
	if err != nil {
		return err
	}
	for _, prov := range pins {
		if err := checkProviderURI(prov); err != nil {
			return err
		}
	}
	if c.ProviderMap == nil {
		c.ProviderMap = map[string]string{}
	}
	for alg, prov := range pins {
		if _, ok := c.ProviderMap[alg]; !ok {
			c.ProviderMap[alg] = prov
		}
	}
	return nil
}

func printProviderMap(c *Config) [][]string {
	algs := make([]string, 0, len(c.ProviderMap))
	for a := range c.ProviderMap {
		algs = append(algs, a)
	}
	sort.Strings(algs)
	var out [][]string
	for _, a := range algs {
		out = append(out, []string{a + "=" + c.ProviderMap[a]})
	}
	return out
}

func setProviderDeny(c *Config, a []string) error {
	deny, err := provider.ParseDenyList(strings.Join(a, " "))
	if err != nil {
		return err
	}
	for _, d := range deny {
		if err := checkProviderURI(d.Provider); err != nil {
			return err
		}
	}
	for _, d := range deny {
		if !containsDeny(c.ProviderDeny, d) {
			c.ProviderDeny = append(c.ProviderDeny, d)
		}
	}
	return nil
}

func containsDeny(list []provider.DenyEntry, d provider.DenyEntry) bool {
	for _, e := range list {
		if e == d {
			return true
		}
	}
	return false
}

func printProviderDeny(c *Config) [][]string {
	var out [][]string
	for _, d := range c.ProviderDeny {
		out = append(out, []string{d.String()})
	}
	return out
}
