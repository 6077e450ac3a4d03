package cpu

import (
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"
)

// Features is what the CPU offers for cryptography, as golang.org/x/sys/cpu
// reports it. Tests build one by hand to force a CPU without AES.
type Features struct {
	Arch string
	// AES and CLMUL together make AES-GCM fast: AES-NI + PCLMULQDQ on
	// amd64, AES + PMULL on arm64, KMA on s390x.
	AES, CLMUL bool
	// Reported for information: the wide-vector forms Go's assembly uses.
	AVX2, AVX512F, VAES, VPCLMULQDQ bool
	// BMI2 with AVX2 on amd64 runs golang.org/x/crypto's ChaCha20-Poly1305
	// assembly, which the provider's ChaCha20 keystream is built on.
	BMI2 bool
	// SHA2 and SHA512 instructions (arm64, s390x). x/sys/cpu does not
	// report the x86 SHA extensions, so they are never claimed there.
	SHA2, SHA512 bool
}

// Detect reads the features of the CPU this process runs on.
func Detect() Features {
	f := Features{Arch: runtime.GOARCH}
	switch runtime.GOARCH {
	case "amd64", "386":
		x := cpu.X86
		f.AES, f.CLMUL = x.HasAES, x.HasPCLMULQDQ
		f.AVX2, f.AVX512F, f.BMI2 = x.HasAVX2, x.HasAVX512F, x.HasBMI2
		f.VAES, f.VPCLMULQDQ = x.HasAVX512VAES, x.HasAVX512VPCLMULQDQ
	case "arm64":
		a := cpu.ARM64
		f.AES, f.CLMUL, f.SHA2, f.SHA512 = a.HasAES, a.HasPMULL, a.HasSHA2, a.HasSHA512
	case "s390x":
		s := cpu.S390X
		f.AES, f.CLMUL = s.HasAESGCM, s.HasAESGCM
		f.SHA2, f.SHA512 = s.HasSHA256, s.HasSHA512
	}
	return f
}

// List names the features present, in the style of /proc/cpuinfo flags.
func (f Features) List() []string {
	var out []string
	add := func(ok bool, name string) {
		if ok {
			out = append(out, name)
		}
	}
	add(f.AES, "aes")
	add(f.CLMUL, clmulName(f.Arch))
	add(f.AVX2, "avx2")
	add(f.BMI2, "bmi2")
	add(f.AVX512F, "avx512f")
	add(f.VAES, "vaes")
	add(f.VPCLMULQDQ, "vpclmulqdq")
	add(f.SHA2, "sha2")
	add(f.SHA512, "sha512")
	return out
}

func clmulName(arch string) string {
	if arch == "arm64" {
		return "pmull"
	}
	return "pclmulqdq"
}

// Mask turns features off by name, the way OPENSSL_ia32cap does for
// OpenSSL: spec is "none" or a comma-separated list of names from List
// ("aes,pclmulqdq"). It lets a user or a test see how offload behaves on a
// CPU without them.
func Mask(f Features, spec string) (Features, error) {
	if spec == "" {
		return f, nil
	}
	if spec == "none" {
		return Features{Arch: f.Arch}, nil
	}
	fields := map[string]*bool{"aes": &f.AES, "pclmulqdq": &f.CLMUL, "pmull": &f.CLMUL, "avx2": &f.AVX2, "bmi2": &f.BMI2,
		"avx512f": &f.AVX512F, "vaes": &f.VAES, "vpclmulqdq": &f.VPCLMULQDQ, "sha2": &f.SHA2, "sha512": &f.SHA512}
	for _, name := range strings.Split(spec, ",") {
		p, ok := fields[strings.TrimSpace(name)]
		if !ok {
			return f, fmt.Errorf("cpu: unknown feature %q in mask (want none or names among aes, pclmulqdq, pmull, avx2, bmi2, avx512f, vaes, vpclmulqdq, sha2, sha512)", name)
		}
		*p = false
	}
	return f, nil
}

// MaskEnv is the environment variable the command line reads for Mask.
const MaskEnv = "OFFLOAD_CPU_MASK"
