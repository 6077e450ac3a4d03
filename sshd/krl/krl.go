// Package krl reads OpenSSH key revocation lists (KRLs, PROTOCOL.krl), as
// made by `ssh-keygen -k`, and answers whether a key or certificate is
// revoked by one, as OpenSSH's sshd does for RevokedKeys.
//
// # What revokes
//
// A plain key is revoked when listed explicitly or by its SHA-1 or SHA-256
// fingerprint. A certificate is revoked when its key is (by the same
// rules), when its CA is, or by a certificate section for its CA (or for
// any CA): its key ID, or its serial number in a list, range or bitmap
// (serial 0, "no serial", is never revoked by serial).
//
// # Strictness
//
// Parse accepts what OpenSSH 9.4 and later accept and refuses the rest
// with a *FormatError naming the offset: unknown section types, critical
// extensions, serial 0 or inverted ranges, hashes of the wrong length,
// trailing bytes. KRL signature sections are refused as OpenSSH 9.4 and
// later refuse them (ErrSigned); sign a KRL with `ssh-keygen -Y sign`
// instead. A caller that cannot parse a KRL must treat every key as
// revoked, as sshd does.
package krl

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/wire"
)

// Magic starts every KRL ("SSHKRL\n\0").
var Magic = []byte("SSHKRL\n\x00")

const formatVersion = 1

// Section types (PROTOCOL.krl).
const (
	sectionCertificates = 1
	sectionExplicitKey  = 2
	sectionSHA1         = 3
	sectionSignature    = 4
	sectionSHA256       = 5
	sectionExtension    = 255

	certSerialList   = 0x20
	certSerialRange  = 0x21
	certSerialBitmap = 0x22
	certKeyID        = 0x23
	certExtension    = 0x39
)

// ErrSigned: the KRL has a signature section, which OpenSSH 9.4 and later
// refuse.
var ErrSigned = errors.New("krl: signed KRLs are not supported (OpenSSH 9.4 and later refuse them too); use ssh-keygen -Y sign")

// FormatError is a malformed KRL.
type FormatError struct {
	Offset int // bytes into the file
	Msg    string
}

func (e *FormatError) Error() string { return fmt.Sprintf("krl: at byte %d: %s", e.Offset, e.Msg) }

// KRL is a parsed revocation list.
type KRL struct {
	Version   uint64
	Generated time.Time
	Comment   string

	keys    map[string]bool // plain key blobs
	sha1s   map[string]bool
	sha256s map[string]bool
	certs   []*certSection
}

// certSection revokes certificates of one CA (ca nil: any CA).
type certSection struct {
	ca      []byte // wire form of the CA key, nil for any
	serials []serialRange
	bitmaps []bitmap
	keyIDs  map[string]bool
}

type serialRange struct{ lo, hi uint64 }

type bitmap struct {
	offset uint64
	bits   *big.Int
}

// IsKRL reports whether b starts like a KRL.
func IsKRL(b []byte) bool { return bytes.HasPrefix(b, Magic) }

// parser reads one level of a KRL with offsets for errors.
type parser struct {
	r    *wire.Reader
	base int // offset of the reader's data in the file
	size int
}

func newParser(b []byte, base int) *parser {
	return &parser{r: wire.NewReader(b), base: base, size: len(b)}
}

func (p *parser) off() int { return p.base + p.size - p.r.Len() }

func (p *parser) fail(format string, args ...any) error {
	return &FormatError{Offset: p.off(), Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) err() error {
	if err := p.r.Err(); err != nil {
		return &FormatError{Offset: p.off(), Msg: err.Error()}
	}
	return nil
}

// Parse reads a KRL.
func Parse(b []byte) (*KRL, error) {
	if !IsKRL(b) {
		return nil, &FormatError{Msg: "not a KRL (bad magic)"}
	}
	p := newParser(b[len(Magic):], len(Magic))
	k := &KRL{keys: map[string]bool{}, sha1s: map[string]bool{}, sha256s: map[string]bool{}}
	if v := p.r.Uint32("format version"); p.r.Err() == nil && v != formatVersion {
		return nil, p.fail("format version %d, want %d", v, formatVersion)
	}
	k.Version = p.r.Uint64("krl version")
	k.Generated = time.Unix(int64(p.r.Uint64("generated date")&(1<<62-1)), 0)
	p.r.Uint64("flags")
	p.r.Bytes("reserved")
	k.Comment = p.r.String("comment")
	if err := p.err(); err != nil {
		return nil, err
	}
	for p.r.Len() > 0 {
		if err := k.section(p); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// section reads one top-level section.
func (k *KRL) section(p *parser) error {
	typ := p.r.Byte("section type")
	if typ == sectionSignature {
		return ErrSigned
	}
	start := p.off() + 4
	data := p.r.Bytes("section data")
	if err := p.err(); err != nil {
		return err
	}
	sp := newParser(data, start)
	switch typ {
	case sectionCertificates:
		return k.certificates(sp)
	case sectionExplicitKey:
		return blobs(sp, 0, func(b []byte) error { return k.explicitKey(sp, b) })
	case sectionSHA1:
		return blobs(sp, sha1.Size, func(b []byte) error { k.sha1s[string(b)] = true; return nil })
	case sectionSHA256:
		return blobs(sp, sha256.Size, func(b []byte) error { k.sha256s[string(b)] = true; return nil })
	case sectionExtension:
		return extension(sp)
	}
	return p.fail("unsupported section type %d", typ)
}

// blobs reads a section of strings (of length size, when not 0), at
// least one.
func blobs(p *parser, size int, add func([]byte) error) error {
	if p.r.Len() == 0 {
		return p.fail("empty section")
	}
	for p.r.Len() > 0 {
		b := p.r.Bytes("blob")
		if err := p.err(); err != nil {
			return err
		}
		if size != 0 && len(b) != size {
			return p.fail("hash of %d bytes, want %d", len(b), size)
		}
		if err := add(b); err != nil {
			return err
		}
	}
	return nil
}

func (k *KRL) explicitKey(p *parser, b []byte) error {
	key, err := ssh.ParsePublicKey(b)
	if err != nil {
		return p.fail("revoked key: %v", err)
	}
	if _, ok := key.(*ssh.Certificate); ok {
		return p.fail("revoked key is a certificate")
	}
	k.keys[string(key.Marshal())] = true
	return nil
}

// extension reads an extension; a critical one cannot be understood.
func extension(p *parser) error {
	name := p.r.String("extension name")
	critical := p.r.Bool("is critical")
	p.r.Bytes("extension contents")
	if err := p.err(); err != nil {
		return err
	}
	if critical {
		return p.fail("unsupported critical extension %q", name)
	}
	return nil
}

// certificates reads a certificate section.
func (k *KRL) certificates(p *parser) error {
	cs := &certSection{keyIDs: map[string]bool{}}
	ca := p.r.Bytes("ca key")
	p.r.Bytes("reserved")
	if err := p.err(); err != nil {
		return err
	}
	if len(ca) > 0 {
		key, err := ssh.ParsePublicKey(ca)
		if err != nil {
			return p.fail("CA key: %v", err)
		}
		cs.ca = key.Marshal()
	}
	for p.r.Len() > 0 {
		typ := p.r.Byte("certificate section type")
		start := p.off() + 4
		data := p.r.Bytes("certificate section data")
		if err := p.err(); err != nil {
			return err
		}
		if err := cs.subsection(typ, newParser(data, start)); err != nil {
			return err
		}
	}
	k.certs = append(k.certs, cs)
	return nil
}

func (cs *certSection) subsection(typ byte, p *parser) error {
	switch typ {
	case certSerialList:
		for p.r.Len() > 0 {
			s := p.r.Uint64("serial")
			if err := cs.addRange(p, s, s); err != nil {
				return err
			}
		}
		return p.err()
	case certSerialRange:
		lo, hi := p.r.Uint64("serial min"), p.r.Uint64("serial max")
		if err := p.err(); err != nil {
			return err
		}
		if err := cs.addRange(p, lo, hi); err != nil {
			return err
		}
	case certSerialBitmap:
		off := p.r.Uint64("serial offset")
		bits := p.r.MPInt("bitmap")
		if err := p.err(); err != nil {
			return err
		}
		if bits.Sign() < 0 {
			return p.fail("negative bitmap")
		}
		cs.bitmaps = append(cs.bitmaps, bitmap{off, bits})
	case certKeyID:
		return blobs(p, 0, func(b []byte) error { cs.keyIDs[string(b)] = true; return nil })
	case certExtension:
		return extension(p)
	default:
		return p.fail("unsupported certificate section type %#x", typ)
	}
	if p.r.Len() != 0 {
		return p.fail("%d trailing bytes", p.r.Len())
	}
	return nil
}

func (cs *certSection) addRange(p *parser, lo, hi uint64) error {
	if lo == 0 || lo > hi {
		return p.fail("bad serial range %d-%d", lo, hi)
	}
	cs.serials = append(cs.serials, serialRange{lo, hi})
	return nil
}

// Revoked reports whether key (a plain key or a certificate) is revoked:
// the key, or for a certificate its key, its CA, its key ID or serial.
func (k *KRL) Revoked(key ssh.PublicKey) bool {
	if k.plainRevoked(key) {
		return true
	}
	c, ok := key.(*ssh.Certificate)
	if !ok {
		return false
	}
	return k.certRevoked(c) || k.plainRevoked(c.SignatureKey)
}

// plainRevoked checks the key (a certificate's key without the
// certificate) against the explicit keys and fingerprints.
func (k *KRL) plainRevoked(key ssh.PublicKey) bool {
	if c, ok := key.(*ssh.Certificate); ok {
		key = c.Key
	}
	blob := key.Marshal()
	s1, s256 := sha1.Sum(blob), sha256.Sum256(blob)
	return k.keys[string(blob)] || k.sha1s[string(s1[:])] || k.sha256s[string(s256[:])]
}

func (k *KRL) certRevoked(c *ssh.Certificate) bool {
	ca := c.SignatureKey.Marshal()
	for _, cs := range k.certs {
		if cs.ca != nil && !bytes.Equal(cs.ca, ca) {
			continue
		}
		if cs.revokes(c) {
			return true
		}
	}
	return false
}

func (cs *certSection) revokes(c *ssh.Certificate) bool {
	if cs.keyIDs[c.KeyId] {
		return true
	}
	if c.Serial == 0 {
		return false
	}
	for _, r := range cs.serials {
		if c.Serial >= r.lo && c.Serial <= r.hi {
			return true
		}
	}
	for _, b := range cs.bitmaps {
		if c.Serial >= b.offset && c.Serial-b.offset < uint64(b.bits.BitLen()) && b.bits.Bit(int(c.Serial-b.offset)) == 1 {
			return true
		}
	}
	return false
}
