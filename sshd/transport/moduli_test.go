package transport

import (
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/provider"
)

// moduliLine formats a group as moduli(5) does.
func moduliLine(typ, tests, tries, size int, g, p *big.Int) string {
	return fmt.Sprintf("20240101000000 %d %d %d %d %X %X", typ, tests, tries, size, g, p)
}

func TestParseModuli(t *testing.T) {
	p2048, _, _ := provider.FiniteFieldGroup("modp2048")
	p4096, _, _ := provider.FiniteFieldGroup("modp4096")
	two, five := big.NewInt(2), big.NewInt(5)
	good := []string{moduliLine(2, 6, 100, 2047, two, p2048), moduliLine(2, 6, 100, 4095, five, p4096)}
	badLines := []string{
		moduliLine(1, 6, 100, 2047, two, p2048), // not a safe prime
		moduliLine(2, 1, 100, 2047, two, p2048), // composite
		moduliLine(2, 0, 100, 2047, two, p2048), // untested
		moduliLine(2, 6, 0, 2047, two, p2048),   // no tries
		moduliLine(2, 6, 100, 2048, two, p2048), // size field off by one
		moduliLine(2, 6, 100, 2047, big.NewInt(1), p2048),
		moduliLine(2, 6, 100, 1023, two, new(big.Int).Rsh(p2048, 1024)), // too small
		"20240101000000 2 6 100 2047 2",                                 // short
		"20240101000000 2 6 100 2047 zz FFFF",
	}
	text := "# comment\n\n" + strings.Join(append(badLines, good...), "\n") + "\n"
	groups, bad, err := parseModuli(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || groups[0].bits != 2048 || groups[1].bits != 4096 || groups[1].g.Int64() != 5 {
		t.Fatalf("groups %+v", groups)
	}
	if len(bad) != len(badLines) {
		t.Errorf("%d bad lines reported, want %d: %v", len(bad), len(badLines), bad)
	}
	if _, _, err := parseModuli(strings.NewReader(strings.Repeat("x", maxModuliLine+1))); err == nil {
		t.Error("an over-long line accepted")
	}
}

func TestSystemModuli(t *testing.T) {
	groups, bad, err := loadModuli(DefaultModuliFile)
	if err != nil {
		t.Fatal(err)
	}
	if groups == nil {
		t.Skipf("%s absent", DefaultModuliFile)
	}
	t.Logf("%s: %d groups, %d lines skipped", DefaultModuliFile, len(groups), len(bad))
	if len(bad) != 0 {
		t.Errorf("the system file's lines refused: %v", bad[0])
	}
	if g, _, err := loadModuli(filepath.Join(t.TempDir(), "none")); g != nil || err != nil {
		t.Errorf("missing file: %v, %v", g, err)
	}
}

func TestChooseGroup(t *testing.T) {
	mk := func(bits ...int) []modulus {
		var out []modulus
		for _, b := range bits {
			out = append(out, modulus{bits: b, p: big.NewInt(int64(b)), g: big.NewInt(2)})
		}
		return out
	}
	for _, tc := range []struct {
		have      []int
		lo, n, hi int
		want      int64
	}{
		{[]int{2048, 3072, 4096, 8192}, 2048, 3072, 8192, 3072},
		{[]int{2048, 4096, 8192}, 2048, 3072, 8192, 4096},
		{[]int{2048, 4096}, 2048, 8192, 8192, 4096}, // none that big: the largest
		{[]int{2048, 4096}, 3000, 3072, 3500, 0},    // nothing in range
		{[]int{8192, 2048}, 2048, 2048, 2048, 2048},
	} {
		p, _ := chooseGroup(mk(tc.have...), tc.lo, tc.n, tc.hi)
		got := int64(0)
		if p != nil {
			got = p.Int64()
		}
		if got != tc.want {
			t.Errorf("%v (%d, %d, %d): %d, want %d", tc.have, tc.lo, tc.n, tc.hi, got, tc.want)
		}
	}
}

// FuzzModuli parses hostile moduli files.
func FuzzModuli(f *testing.F) {
	if b, err := os.ReadFile(DefaultModuliFile); err == nil && len(b) > 4096 {
		f.Add(b[:4096])
	}
	f.Add([]byte("20240101000000 2 6 100 2047 2 FFFF\n# x\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		groups, _, err := parseModuli(strings.NewReader(string(in)))
		for _, g := range groups {
			if err != nil || g.bits < minModulusBits || g.bits > maxModulusBits || g.p.BitLen() != g.bits {
				t.Fatalf("accepted a group of %d bits (%v)", g.bits, err)
			}
		}
	})
}
