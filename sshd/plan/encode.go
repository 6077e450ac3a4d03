package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/offload/offload/sshd/wire"
)

// FormatVersion is the version of the encoding Marshal writes; Parse
// accepts only it (a monitor and its children are one program).
const FormatVersion = 1

// Bounds of the decoder.
const (
	maxName    = 64       // algorithm and provider names
	maxText    = 4096     // version string, paths, provenance texts
	maxEntries = 256      // entries of a list or map
	maxKeyBlob = 16 << 10 // a host key or certificate
)

// ErrFormat is wrapped by every error of Parse.
var ErrFormat = errors.New("plan: malformed plan")

// Marshal encodes p.
func (p *Plan) Marshal() []byte {
	b := []byte{FormatVersion}
	for _, l := range [][]string{p.Ciphers, p.MACs, p.KexAlgorithms, p.HostKeyAlgorithms, p.ServerSigAlgs} {
		b = appendStrings(b, l)
	}
	b = wire.AppendString(b, p.Version)
	b = wire.AppendUint64(b, p.RekeyBytes)
	b = wire.AppendUint64(b, uint64(p.RekeyInterval))
	b = wire.AppendUint64(b, uint64(p.KexTimeout))
	b = appendBlobs(appendBlobs(b, p.HostPublicKeys), p.HostCertificates)
	b = appendStrings(b, flatten(p.HostKeyProvenance))
	b = wire.AppendString(b, p.CipherSelection)
	b = appendScores(b, p.CipherScores)
	b = wire.AppendBool(b, p.Compression)
	b = wire.AppendString(b, p.ModuliFile)
	b = wire.AppendString(b, p.Mode)
	return appendAssignments(appendAssignments(b, p.Preauth), p.Postauth)
}

func appendStrings(b []byte, l []string) []byte {
	b = wire.AppendUint32(b, uint32(len(l)))
	for _, s := range l {
		b = wire.AppendString(b, s)
	}
	return b
}

func appendBlobs(b []byte, l [][]byte) []byte {
	b = wire.AppendUint32(b, uint32(len(l)))
	for _, s := range l {
		b = wire.AppendBytes(b, s)
	}
	return b
}

// flatten is m as key, value pairs in key order.
func flatten(m map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, k, m[k])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendScores(b []byte, m map[string]float64) []byte {
	b = wire.AppendUint32(b, uint32(len(m)))
	for _, k := range sortedKeys(m) {
		b = wire.AppendUint64(wire.AppendString(b, k), math.Float64bits(m[k]))
	}
	return b
}

func appendAssignments(b []byte, l []Assignment) []byte {
	b = wire.AppendUint32(b, uint32(len(l)))
	for _, a := range l {
		b = wire.AppendByte(wire.AppendString(wire.AppendString(b, a.Primitive), a.Provider), byte(a.Where))
	}
	return b
}

// decoder is a wire.Reader that bounds each field.
type decoder struct {
	*wire.Reader
	err error
}

func (d *decoder) fail(field string, err error) {
	if d.err == nil {
		d.err = &wire.FieldError{Field: field, Err: err}
	}
}

func (d *decoder) ok() bool { return d.err == nil && d.Err() == nil }

func (d *decoder) bytes(field string, max int) []byte {
	b := d.Bytes(field)
	if len(b) > max {
		d.fail(field, fmt.Errorf("%d bytes, at most %d", len(b), max))
	}
	if !d.ok() {
		return nil
	}
	return append([]byte(nil), b...)
}

func (d *decoder) string(field string, max int) string { return string(d.bytes(field, max)) }

func (d *decoder) count(field string) int {
	n := d.Uint32(field + " count")
	if n > maxEntries {
		d.fail(field, fmt.Errorf("%d entries, at most %d", n, maxEntries))
	}
	if !d.ok() {
		return 0
	}
	return int(n)
}

func (d *decoder) strings(field string, max int) []string {
	var out []string
	for i, n := 0, d.count(field); i < n && d.ok(); i++ {
		out = append(out, d.string(field, max))
	}
	return out
}

func (d *decoder) blobs(field string) [][]byte {
	var out [][]byte
	for i, n := 0, d.count(field); i < n && d.ok(); i++ {
		out = append(out, d.bytes(field, maxKeyBlob))
	}
	return out
}

// boolean reads a boolean that must be 0 or 1.
func (d *decoder) boolean(field string) bool {
	b := d.Byte(field)
	if b > 1 {
		d.fail(field, fmt.Errorf("boolean %d, want 0 or 1", b))
	}
	return b == 1
}

func (d *decoder) duration(field string) time.Duration { return time.Duration(int64(d.Uint64(field))) }

func (d *decoder) provenance() map[string]string {
	l := d.strings("host key provenance", maxText)
	if len(l)%2 != 0 {
		d.fail("host key provenance", errors.New("odd number of entries"))
	}
	if len(l) == 0 || !d.ok() {
		return nil
	}
	m := map[string]string{}
	for i := 0; i+1 < len(l); i += 2 {
		if i > 0 && l[i] <= l[i-2] {
			d.fail("host key provenance", errors.New("keys out of order or repeated"))
			return nil
		}
		m[l[i]] = l[i+1]
	}
	return m
}

func (d *decoder) scores() map[string]float64 {
	n := d.count("cipher scores")
	if n == 0 {
		return nil
	}
	m := map[string]float64{}
	prev := ""
	for i := 0; i < n && d.ok(); i++ {
		k := d.string("cipher score name", maxName)
		if i > 0 && k <= prev {
			d.fail("cipher scores", errors.New("names out of order or repeated"))
		}
		m[k], prev = math.Float64frombits(d.Uint64("cipher score")), k
	}
	return m
}

func (d *decoder) assignments(field string) []Assignment {
	var out []Assignment
	for i, n := 0, d.count(field); i < n && d.ok(); i++ {
		a := Assignment{Primitive: d.string(field, maxName), Provider: d.string(field, maxName), Where: Where(d.Byte(field))}
		if a.Where > InMonitor {
			d.fail(field, fmt.Errorf("place %d", a.Where))
		}
		out = append(out, a)
	}
	return out
}

// Parse decodes a plan Marshal encoded; every field is bounded.
func Parse(b []byte) (*Plan, error) {
	d := &decoder{Reader: wire.NewReader(b)}
	if v := d.Byte("format version"); d.ok() && v != FormatVersion {
		return nil, fmt.Errorf("%w: format version %d, want %d", ErrFormat, v, FormatVersion)
	}
	p := &Plan{}
	for _, l := range []*[]string{&p.Ciphers, &p.MACs, &p.KexAlgorithms, &p.HostKeyAlgorithms, &p.ServerSigAlgs} {
		*l = d.strings("algorithms", maxName)
	}
	p.Version = d.string("version", maxText)
	p.RekeyBytes = d.Uint64("rekey bytes")
	p.RekeyInterval, p.KexTimeout = d.duration("rekey interval"), d.duration("kex timeout")
	p.HostPublicKeys, p.HostCertificates = d.blobs("host keys"), d.blobs("host certificates")
	p.HostKeyProvenance = d.provenance()
	p.CipherSelection = d.string("cipher selection", maxName)
	p.CipherScores = d.scores()
	p.Compression = d.boolean("compression")
	p.ModuliFile = d.string("moduli file", maxText)
	p.Mode = d.string("mode", maxName)
	p.Preauth, p.Postauth = d.assignments("pre-auth"), d.assignments("post-auth")
	if err := d.finish(); err != nil {
		return nil, err
	}
	return p, nil
}

func (d *decoder) finish() error {
	err := d.err
	if err == nil {
		err = d.Done()
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return nil
}
