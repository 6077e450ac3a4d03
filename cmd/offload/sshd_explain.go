package main

import (
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/config"
	"github.com/offload/offload/sshd/transport"
)

// printEffective writes what -T shows: the effective configuration, with
// the algorithm lists the server really offers (tr's: host-key
// algorithms those of the keys), then, as comment lines, which provider
// serves each algorithm and why, and which provider holds each host key. The comments keep the output a valid config file.
func printEffective(w io.Writer, c *config.Config, reg *provider.Registry, keys []hostKey, tr *transport.Server) error {
	eff := c.Clone()
	eff.KexAlgorithms, eff.HostKeyAlgorithms, eff.Ciphers, eff.MACs = tr.Offer()
	if err := eff.Print(w); err != nil {
		return err
	}
	fmt.Fprintln(w, "# providers")
	for _, p := range reg.Providers() {
		fmt.Fprintf(w, "#   %s (%s)\n", p.Name(), p.Kind())
		if pr, ok := p.(provider.PendingReporter); ok {
			for _, why := range pr.Pending() {
				fmt.Fprintf(w, "#     MISSING: %s\n", why)
			}
		}
	}
	fmt.Fprintf(w, "# policy %s\n", reg.Policy())
	sections := []struct {
		what  transport.AlgorithmKind
		names []string
	}{{transport.KindCipher, eff.Ciphers}, {transport.KindMAC, eff.MACs}, {transport.KindKex, eff.KexAlgorithms}}
	for _, s := range sections {
		for _, name := range s.names {
			explainAlgorithm(w, reg, s.what, name)
		}
	}
	for _, k := range keys {
		explainHostKey(w, k)
	}
	return nil
}

// explainAlgorithm prints one line per catalog primitive behind an SSH
// algorithm: the chosen provider and the registry's reason.
func explainAlgorithm(w io.Writer, reg *provider.Registry, kind transport.AlgorithmKind, name string) {
	what := kind.String()
	a, _ := transport.LookupAlgorithm(kind, name)
	prims := a.Primitives
	if len(prims) == 0 {
		fmt.Fprintf(w, "# %s %s: no provider mapping known\n", what, name)
		return
	}
	for _, alg := range prims {
		ex, err := reg.Explain(alg)
		if err != nil {
			fmt.Fprintf(w, "# %s %s: %s: UNAVAILABLE: %v\n", what, name, alg, err)
			continue
		}
		fmt.Fprintf(w, "# %s %s: %s by %s (%s)\n", what, name, alg, ex.Chosen, ex.Reason)
		for _, warn := range ex.Warnings {
			fmt.Fprintf(w, "#   warning: %s\n", warn)
		}
	}
}

func explainHostKey(w io.Writer, k hostKey) {
	desc := "unknown key type"
	if s, err := ssh.NewSignerFromSigner(k.signer); err == nil {
		pub := s.PublicKey()
		desc = pub.Type() + " " + ssh.FingerprintSHA256(pub)
	}
	fmt.Fprintf(w, "# hostkey %s: %s, held by %s\n", provider.RedactRef(k.ref), desc, k.provider)
}

// configSummary is one log line's worth of what a configuration serves.
func configSummary(c *config.Config, keys []hostKey) string {
	var refs []string
	for _, k := range keys {
		refs = append(refs, provider.RedactRef(k.ref)+"@"+k.provider)
	}
	return strings.Join(refs, ",")
}
