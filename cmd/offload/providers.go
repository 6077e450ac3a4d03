package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/offload/offload/provider"
)

type providerView struct {
	Name         string
	Kind         string
	Capabilities []capabilityView `json:",omitempty"`
}

type capabilityView struct {
	Algorithm string
	Ops       string
	Flags     string `json:",omitempty"`
}

type providersReport struct {
	Build     buildInfo
	Policy    string
	Providers []providerView
	Choices   []*provider.Explanation
}

func cmdProviders(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("providers", stderr)
	verbose := fs.Bool("v", false, "show capabilities with flags, candidates and measurements")
	asJSON := fs.Bool("json", false, "print as JSON")
	recal := fs.Bool("calibrate", false, "measure every provider again and replace the cached results")
	var rf registryFlags
	rf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := rf.features()
	if err != nil {
		return usagef("%v", err)
	}
	reg, err := rf.open(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	defer reg.Close()
	if *recal {
		fmt.Fprintln(stderr, "calibrating every provider and algorithm...")
		if err := reg.Calibrator().Remeasure(ctx, nil, reg.Providers()); err != nil {
			return err
		}
	}
	rep := providersReport{Build: currentBuild(f), Policy: reg.Policy().String()}
	for _, p := range reg.Providers() {
		rep.Providers = append(rep.Providers, viewOf(p, *verbose || *asJSON))
	}
	for _, a := range provider.Algorithms() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ex, err := reg.Explain(a.Name)
		if err != nil && ex == nil {
			return err
		}
		rep.Choices = append(rep.Choices, ex)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printProviders(stdout, &rep, *verbose)
	if *verbose {
		describeAll(stdout, reg)
	}
	return nil
}

// describer is implemented by providers with more to tell than their
// capabilities (a PKCS #11 provider's tokens, pools and mechanisms).
type describer interface {
	Describe(w io.Writer) error
}

func describeAll(w io.Writer, reg *provider.Registry) {
	for _, p := range reg.Providers() {
		if pr, ok := p.(provider.PendingReporter); ok {
			for _, why := range pr.Pending() {
				fmt.Fprintf(w, "\n%s: MISSING: %s\n", p.Name(), why)
			}
		}
		if d, ok := p.(describer); ok {
			fmt.Fprintf(w, "\n%s:\n", p.Name())
			if err := d.Describe(w); err != nil {
				fmt.Fprintf(w, "  (%v)\n", err)
			}
		}
	}
}

func viewOf(p provider.Provider, caps bool) providerView {
	v := providerView{Name: p.Name(), Kind: p.Kind().String()}
	if caps {
		for _, c := range p.Capabilities() {
			v.Capabilities = append(v.Capabilities, capabilityView{c.Algorithm, c.Ops.String(), c.Flags.String()})
		}
	}
	return v
}

func printProviders(w io.Writer, rep *providersReport, verbose bool) {
	for _, l := range rep.Build.lines() {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "policy: %s\n\nProviders:\n", rep.Policy)
	for _, p := range rep.Providers {
		fmt.Fprintf(w, "  %-24s %s\n", p.Name, p.Kind)
		for _, c := range p.Capabilities {
			fmt.Fprintf(w, "      %-22s %-28s %s\n", c.Algorithm, c.Ops, c.Flags)
		}
	}
	fmt.Fprintln(w, "\nChoice per algorithm:")
	for _, ex := range rep.Choices {
		printChoice(w, ex, verbose)
	}
}

func printChoice(w io.Writer, ex *provider.Explanation, verbose bool) {
	if ex.Chosen == "" {
		fmt.Fprintf(w, "  %-22s none: %s\n", ex.Algorithm, noneText(ex))
		return
	}
	fmt.Fprintf(w, "  %-22s %-12s %s\n", ex.Algorithm, ex.Chosen, ex.Reason)
	for _, warn := range ex.Warnings {
		fmt.Fprintf(w, "      warning: %s\n", warn)
	}
	if !verbose {
		return
	}
	for _, c := range ex.Candidates {
		line := fmt.Sprintf("      %-18s %-9s", c.Provider, c.Kind)
		if c.Measurement != nil {
			line += " " + c.Measurement.Summary()
		}
		if c.Excluded != "" {
			line += " (excluded: " + c.Excluded + ")"
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

func noneText(ex *provider.Explanation) string {
	if len(ex.Candidates) == 0 {
		return "no provider offers it"
	}
	var parts []string
	for _, c := range ex.Candidates {
		parts = append(parts, c.Provider+" "+c.Excluded)
	}
	return strings.Join(parts, "; ")
}
