package transport

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/big"
	"os"
	"strconv"
	"strings"
)

// DefaultModuliFile is where OpenSSH keeps the groups for
// diffie-hellman-group-exchange (moduli(5)).
const DefaultModuliFile = "/etc/ssh/moduli"

// Limits of a moduli file.
const (
	maxModuliBytes = 4 << 20
	maxModuliLine  = 8 << 10
	maxModuli      = 4096
	minModulusBits = 2048 // OpenSSH's DH_GRP_MIN
	maxModulusBits = 8192 // OpenSSH's DH_GRP_MAX
)

// modulus is one usable group of a moduli file.
type modulus struct {
	bits int
	g, p *big.Int
}

// ModuliError reports a line of a moduli file that cannot be used.
type ModuliError struct {
	Line int
	Msg  string
}

func (e *ModuliError) Error() string {
	return fmt.Sprintf("transport: moduli line %d: %s", e.Line, e.Msg)
}

// loadModuli reads the moduli file at path. A missing file is not an
// error: group exchange then uses the fixed groups, as OpenSSH does.
func loadModuli(path string) ([]modulus, []error, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("transport: moduli: %w", err)
	}
	defer f.Close()
	return parseModuli(io.LimitReader(f, maxModuliBytes+1))
}

// parseModuli parses moduli(5): "time type tests tries size generator
// modulus" per line, # comments. Lines that are not safe primes that
// passed a primality test, whose size field does not match the modulus,
// or outside 2048 to 8192 bits are skipped and reported in bad; only a
// file beyond the limits is an error.
func parseModuli(r io.Reader) (groups []modulus, bad []error, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxModuliLine)
	total, n := 0, 0
	for sc.Scan() {
		n++
		total += len(sc.Bytes()) + 1
		if total > maxModuliBytes {
			return nil, nil, fmt.Errorf("transport: moduli file larger than %d bytes", maxModuliBytes)
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		m, err := parseModulus(string(line))
		if err != nil {
			bad = append(bad, &ModuliError{Line: n, Msg: err.Error()})
			continue
		}
		if len(groups) == maxModuli {
			return nil, nil, fmt.Errorf("transport: more than %d groups in the moduli file", maxModuli)
		}
		groups = append(groups, m)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("transport: moduli line %d: %w", n+1, err)
	}
	return groups, bad, nil
}

func parseModulus(line string) (modulus, error) {
	f := strings.Fields(line)
	if len(f) != 7 {
		return modulus{}, fmt.Errorf("%d fields, want 7", len(f))
	}
	typ, err1 := strconv.ParseUint(f[1], 10, 8)
	tests, err2 := strconv.ParseUint(f[2], 16, 16)
	tries, err3 := strconv.ParseUint(f[3], 10, 32)
	size, err4 := strconv.ParseUint(f[4], 10, 16)
	g, ok1 := new(big.Int).SetString(f[5], 16)
	p, ok2 := new(big.Int).SetString(f[6], 16)
	switch {
	case err1 != nil || err2 != nil || err3 != nil || err4 != nil || !ok1 || !ok2 || g.Sign() <= 0 || p.Sign() <= 0:
		return modulus{}, fmt.Errorf("malformed field")
	case typ != 2:
		return modulus{}, fmt.Errorf("type %d is not a safe prime (2)", typ)
	case tests&1 != 0 || tests == 0 || tries == 0:
		return modulus{}, fmt.Errorf("not tested as prime (tests %#x, tries %d)", tests, tries)
	case int(size)+1 != p.BitLen():
		return modulus{}, fmt.Errorf("size %d does not match a %d-bit modulus", size, p.BitLen())
	case p.BitLen() < minModulusBits || p.BitLen() > maxModulusBits:
		return modulus{}, fmt.Errorf("%d-bit modulus outside %d to %d bits", p.BitLen(), minModulusBits, maxModulusBits)
	case g.Cmp(big.NewInt(2)) < 0 || g.Cmp(new(big.Int).Sub(p, big.NewInt(1))) >= 0:
		return modulus{}, fmt.Errorf("generator out of range")
	}
	return modulus{bits: p.BitLen(), g: g, p: p}, nil
}
