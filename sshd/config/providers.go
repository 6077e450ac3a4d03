package config

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/offload/offload/provider"
)

// checkPKCS11URI does the checks that need no PKCS #11 code: the scheme,
// percent escapes, no blanks. The provider parses the URI fully when it
// opens the key (offload sshd -t does).
func checkPKCS11URI(s string) error {
	if !strings.HasPrefix(strings.ToLower(s), "pkcs11:") {
		return fmt.Errorf("%q is not a pkcs11: URI", provider.RedactRef(s))
	}
	if strings.ContainsAny(s, " \t") {
		return fmt.Errorf("%q: blanks in a pkcs11: URI must be written %%20", provider.RedactRef(s))
	}
	for part := range strings.SplitSeq(s[len("pkcs11:"):], "?") {
		if _, err := url.PathUnescape(part); err != nil {
			return fmt.Errorf("%q: bad percent escape", provider.RedactRef(s))
		}
	}
	return nil
}

func setPKCS11Token(c *Config, a []string) error {
	if err := checkPKCS11URI(a[0]); err != nil {
		return err
	}
	c.PKCS11Tokens = appendNew(c.PKCS11Tokens, a[0])
	return nil
}

func redactAll(refs []string) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = provider.RedactRef(r)
	}
	return out
}

func setCryptoPolicy(c *Config, a []string) (err error) {
	c.CryptoPolicy, err = provider.ParseMode(a[0])
	return err
}

// setProviderMap merges pins; an algorithm pinned on an earlier line keeps
// its first pin, as a single-valued keyword would.
func setProviderMap(c *Config, a []string) error {
	pins, err := provider.ParsePins(strings.Join(a, " "))
	if err != nil {
		return err
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
