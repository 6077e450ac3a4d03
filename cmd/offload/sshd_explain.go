package main

import (
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/config"
	"github.com/offload/offload/sshd/plan"
	"github.com/offload/offload/sshd/transport"
)

// printEffective writes what -T shows: the effective configuration, with
// the algorithm lists the server really offers (tr's: host-key
// algorithms those of the keys), then, as comment lines, which provider
// serves each algorithm and why (and, for a separated server, where its
// children serve it by the plan pl the monitor sends them), which
// provider holds each host key, and the plan. The comments keep the
// output a valid config file.
func printEffective(w io.Writer, c *config.Config, reg *provider.Registry, keys []hostKey, tr *transport.Server, pl *plan.Plan) error {
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
	fmt.Fprintf(w, "# cipherselection %s\n", tr.CipherSelectionSummary())
	sections := []struct {
		what  transport.AlgorithmKind
		names []string
	}{{transport.KindCipher, eff.Ciphers}, {transport.KindMAC, eff.MACs}, {transport.KindKex, eff.KexAlgorithms}}
	for _, s := range sections {
		for _, name := range s.names {
			explainAlgorithm(w, reg, pl, s.what, name)
		}
	}
	for _, k := range keys {
		explainHostKey(w, k)
	}
	if pl != nil {
		return pl.Print(w)
	}
	return nil
}

// explainAlgorithm prints one line per catalog primitive behind an SSH
// algorithm: the chosen provider and the registry's reason, and, for a
// separated server, the children's choice where it differs.
func explainAlgorithm(w io.Writer, reg *provider.Registry, pl *plan.Plan, kind transport.AlgorithmKind, name string) {
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
		explainStages(w, pl, alg, ex.Chosen)
	}
}

// explainStages prints where each kind of child serves alg, by the plan
// the monitor sends them, when that is not the monitor's choice: the
// pre-auth workers, which do the first key exchange and carry the
// connection until the login, and the post-auth processes, which carry
// it afterwards. A token provider lives only in the monitor: a child
// reaches its AEADs through the monitor after the login and serves its
// other primitives itself.
func explainStages(w io.Writer, pl *plan.Plan, alg, monitorChoice string) {
	if pl == nil {
		return
	}
	for _, s := range []plan.Stage{plan.Preauth, plan.Postauth} {
		a, ok := pl.Lookup(s, alg)
		switch {
		case !ok:
			fmt.Fprintf(w, "#   in the %s: %s: UNAVAILABLE: not in the plan\n", s, alg)
		case a.Provider != monitorChoice:
			fmt.Fprintf(w, "#   in the %s: %s by %s (%s is the monitor's only)\n", s, alg, a.Provider, monitorChoice)
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
