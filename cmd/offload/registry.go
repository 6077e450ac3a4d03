package main

import (
	"flag"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/software"
)

// registryFlags are the provider flags shared by commands.
type registryFlags struct {
	policy   string
	pins     string
	deny     string
	cpuMask  string
	cacheDir string
	noCache  bool
	budget   time.Duration
	pkcs11   string
}

func (r *registryFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.policy, "policy", "fastest", "crypto policy: fastest, prefer-hardware or software-only")
	fs.StringVar(&r.pins, "pin", "", "per-algorithm provider pins, e.g. aes128-gcm=cpu,x25519=software")
	fs.StringVar(&r.deny, "deny", "", "deny list: algorithms, providers or alg=provider entries")
	fs.StringVar(&r.cpuMask, "cpu-mask", os.Getenv(cpu.MaskEnv), "CPU features to ignore (none, or e.g. aes,pclmulqdq); default $"+cpu.MaskEnv)
	fs.StringVar(&r.cacheDir, "calibration-cache", "", "calibration cache directory (default: user cache dir/offload)")
	fs.BoolVar(&r.noCache, "no-cache", false, "do not read or write the calibration cache")
	fs.DurationVar(&r.budget, "budget", provider.DefaultBudget, "calibration time per provider and algorithm")
	fs.StringVar(&r.pkcs11, "pkcs11", "", "add a PKCS #11 token: a pkcs11: URI with module-path or module-name and pin-source\n(the PIN may also come from $OFFLOAD_PKCS11_PIN; never put it on the command line)")
}

func (r *registryFlags) features() (cpu.Features, error) {
	return cpu.Mask(cpu.Detect(), r.cpuMask)
}

// open builds a registry with the software and cpu providers and the
// policy from the flags.
func (r *registryFlags) open(log *slog.Logger) (*provider.Registry, error) {
	f, err := r.features()
	if err != nil {
		return nil, usagef("%v", err)
	}
	pol, err := r.parsePolicy()
	if err != nil {
		return nil, usagef("%v", err)
	}
	cal := provider.NewCalibrator(provider.CalibratorConfig{Dir: r.cacheDir, NoCache: r.noCache, Budget: r.budget, Logger: log})
	reg := provider.New(provider.Config{Calibrator: cal, Logger: log})
	var extra []provider.Provider
	if r.pkcs11 != "" {
		p, err := pkcs11.OpenURI(r.pkcs11, pkcs11.Config{Logger: log})
		if err != nil {
			return nil, err
		}
		extra = append(extra, p)
	}
	if err := populate(reg, f, extra...); err != nil {
		return nil, err
	}
	if err := reg.SetPolicy(pol); err != nil {
		reg.Close()
		return nil, usagef("%v", err)
	}
	return reg, nil
}

// populate registers the cpu provider for features f, the software
// provider and the extra ones; on failure it closes the registry.
func populate(reg *provider.Registry, f cpu.Features, extra ...provider.Provider) error {
	for _, p := range append([]provider.Provider{cpu.New(f), software.New()}, extra...) {
		if err := reg.Register(p); err != nil {
			reg.Close()
			return err
		}
	}
	return nil
}

func (r *registryFlags) parsePolicy() (provider.Policy, error) {
	var pol provider.Policy
	var err error
	if pol.Mode, err = provider.ParseMode(r.policy); err != nil {
		return pol, err
	}
	if pol.Pins, err = provider.ParsePins(r.pins); err != nil {
		return pol, err
	}
	pol.Deny, err = provider.ParseDenyList(r.deny)
	return pol, err
}

func stderrLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
