// Package uri parses and prints RFC 7512 PKCS #11 URIs, in pure Go, so
// that configuration and command-line code can handle "pkcs11:" key and
// token references in builds without cgo.
//
// # Syntax
//
// A URI has path attributes, separated by ";", that select a slot, a token
// and an object, and query attributes, separated by "&", that say how to
// reach them:
//
//	pkcs11:token=unit0;object=host;type=private?module-name=softhsm2&pin-source=/etc/offload/pin
//
// Values are percent-encoded where RFC 7512 requires; ids are printed with
// every byte encoded. Offload adds the query attributes max-sessions (the
// token's session pool size), failover-token (the label of a second
// token holding the same keys, used when the first is lost) and
// peer-token (labels of tokens holding the same keys that share the
// signing, comma-separated). Vendor attributes ("x-...") are kept.
//
// # Matching
//
// MatchesToken compares the library, slot and token attributes with what
// a module reports, before any login, so no PIN is spent on the wrong
// token.
package uri

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// URI is a parsed RFC 7512 PKCS #11 URI. Path attributes select a token
// and an object; query attributes say how to reach them (module, PIN,
// session limit). Fields left empty match anything.
//
// Offload adds query attributes of its own: max-sessions (the size of
// the token's session pool), failover-token (the label of a second token
// holding the same keys, a standby) and peer-token (labels of tokens
// holding the same keys that sign too: active-active).
type URI struct {
	// Path attributes: library.
	LibraryManufacturer string
	LibraryDescription  string
	LibraryVersion      string
	// Path attributes: slot.
	SlotDescription  string
	SlotManufacturer string
	SlotID           *uint
	// Path attributes: token.
	Token        string // CK_TOKEN_INFO label
	Manufacturer string
	Serial       string
	Model        string
	// Path attributes: object.
	Object string // CKA_LABEL
	ID     []byte // CKA_ID; nil means any, an empty id is written "id="
	Type   string // public, private, cert, secret-key, data

	// Query attributes.
	ModulePath    string
	ModuleName    string
	PINSource     string
	PINValue      string
	MaxSessions   int
	FailoverToken string
	PeerTokens    []string

	// Vendor attributes ("x-..."), kept so they print back.
	Vendor [][2]string
}

// Error reports a malformed PKCS #11 URI, naming the offending part.
type Error struct {
	URI    string // redacted
	Part   string
	Reason string
}

func (e *Error) Error() string {
	if e.Part == "" {
		return fmt.Sprintf("pkcs11: bad URI %q: %s", e.URI, e.Reason)
	}
	return fmt.Sprintf("pkcs11: bad URI %q: %q: %s", e.URI, e.Part, e.Reason)
}

// Redaction is what String and Redacted print in place of a pin-value.
const Redaction = "REDACTED"

// The object types RFC 7512 names for the "type" attribute.
var objectTypes = map[string]bool{"public": true, "private": true, "cert": true, "secret-key": true, "data": true}

// IsURI reports whether s is meant as a PKCS #11 URI (it may still be malformed).
func IsURI(s string) bool {
	return len(s) >= 7 && strings.EqualFold(s[:7], "pkcs11:")
}

// ParseURI parses a PKCS #11 URI. It rejects what RFC 7512 forbids
// (a repeated path attribute, a bad percent-encoding, an unknown standard
// attribute, a bad type or slot-id) with a *Error naming the part.
func Parse(s string) (*URI, error) {
	redacted := redact(s)
	fail := func(part, reason string) (*URI, error) {
		return nil, &Error{URI: redacted, Part: redact(part), Reason: reason}
	}
	if !IsURI(s) {
		return fail("", `must start with "pkcs11:"`)
	}
	rest := s[7:]
	if strings.ContainsAny(rest, " \t\r\n\"<>\\^`{}") {
		return fail("", "contains characters that must be percent-encoded")
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		return fail(rest[i:], "a PKCS #11 URI has no fragment")
	}
	path, query, _ := strings.Cut(rest, "?")
	u := &URI{}
	seen := map[string]bool{}
	if path != "" {
		for _, attr := range strings.Split(path, ";") {
			name, raw, ok := strings.Cut(attr, "=")
			if !ok || name == "" {
				return fail(attr, `path attribute must be "name=value"`)
			}
			if strings.ContainsAny(raw, "/?") {
				return fail(attr, `"/" and "?" must be percent-encoded in a path attribute`)
			}
			if seen[name] {
				return fail(attr, "attribute given twice")
			}
			seen[name] = true
			val, err := unescape(raw)
			if err != nil {
				return fail(attr, err.Error())
			}
			if err := u.setPath(name, val); err != nil {
				return fail(attr, err.Error())
			}
		}
	}
	if query != "" {
		for _, attr := range strings.Split(query, "&") {
			name, raw, ok := strings.Cut(attr, "=")
			if !ok || name == "" {
				return fail(attr, `query attribute must be "name=value"`)
			}
			if seen["?"+name] {
				return fail(attr, "attribute given twice")
			}
			seen["?"+name] = true
			if name == "peer-token" {
				if err := u.setPeers(raw); err != nil {
					return fail(attr, err.Error())
				}
				continue
			}
			val, err := unescape(raw)
			if err != nil {
				return fail(attr, err.Error())
			}
			if err := u.setQuery(name, val); err != nil {
				return fail(attr, err.Error())
			}
		}
	}
	if u.ModulePath != "" && u.ModuleName != "" {
		return fail("", "module-path and module-name are both given; name one module")
	}
	if u.PINSource != "" && u.PINValue != "" {
		return fail("", "pin-source and pin-value are both given; give the PIN one way")
	}
	return u, nil
}

// MustParseURI is ParseURI for URIs fixed in source code.
func MustParse(s string) *URI {
	u, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// setPeers reads peer-token's comma-separated labels (a comma within a
// label is written %2C).
func (u *URI) setPeers(raw string) error {
	for _, part := range strings.Split(raw, ",") {
		label, err := unescape(part)
		if err != nil {
			return err
		}
		if label == "" {
			return fmt.Errorf("peer-token has an empty label")
		}
		u.PeerTokens = append(u.PeerTokens, label)
	}
	return nil
}

func (u *URI) setPath(name, val string) error {
	switch name {
	case "library-manufacturer":
		u.LibraryManufacturer = val
	case "library-description":
		u.LibraryDescription = val
	case "library-version":
		if !validVersion(val) {
			return fmt.Errorf(`library-version must be "major" or "major.minor"`)
		}
		u.LibraryVersion = val
	case "slot-description":
		u.SlotDescription = val
	case "slot-manufacturer":
		u.SlotManufacturer = val
	case "slot-id":
		n, err := strconv.ParseUint(val, 10, 0)
		if err != nil {
			return fmt.Errorf("slot-id must be a decimal number")
		}
		id := uint(n)
		u.SlotID = &id
	case "token":
		u.Token = val
	case "manufacturer":
		u.Manufacturer = val
	case "serial":
		u.Serial = val
	case "model":
		u.Model = val
	case "object":
		u.Object = val
	case "id":
		u.ID = []byte(val)
	case "type":
		if !objectTypes[val] {
			return fmt.Errorf("type must be public, private, cert, secret-key or data")
		}
		u.Type = val
	default:
		if !strings.HasPrefix(name, "x-") {
			return fmt.Errorf("unknown path attribute %q (known: token, manufacturer, serial, model, object, id, type, slot-id, slot-description, slot-manufacturer, library-*, and vendor x-...)", name)
		}
		u.Vendor = append(u.Vendor, [2]string{name, val})
	}
	return nil
}

func (u *URI) setQuery(name, val string) error {
	switch name {
	case "module-path":
		if val == "" {
			return fmt.Errorf("module-path is empty")
		}
		u.ModulePath = val
	case "module-name":
		if val == "" || strings.ContainsAny(val, "/\\") {
			return fmt.Errorf("module-name must be a bare name such as softhsm2, not a path")
		}
		u.ModuleName = val
	case "pin-source":
		if val == "" {
			return fmt.Errorf("pin-source is empty")
		}
		u.PINSource = val
	case "pin-value":
		if val == Redaction {
			return fmt.Errorf("pin-value is %q: this URI was printed with its PIN hidden (URI.String, URI.Redacted); "+
				"use URI.Full for the form that logs in, or give the PIN with pin-source", Redaction)
		}
		u.PINValue = val
	case "max-sessions":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > 1024 {
			return fmt.Errorf("max-sessions must be a number from 1 to 1024")
		}
		u.MaxSessions = n
	case "failover-token":
		if val == "" {
			return fmt.Errorf("failover-token is empty")
		}
		u.FailoverToken = val
	default:
		if !strings.HasPrefix(name, "x-") {
			return fmt.Errorf("unknown query attribute %q (known: module-name, module-path, pin-source, pin-value, max-sessions, failover-token, peer-token, and vendor x-...)", name)
		}
		u.Vendor = append(u.Vendor, [2]string{"?" + name, val})
	}
	return nil
}

func validVersion(v string) bool {
	maj, min, hasMin := strings.Cut(v, ".")
	isNum := func(s string) bool {
		_, err := strconv.ParseUint(s, 10, 8)
		return err == nil
	}
	return isNum(maj) && (!hasMin || isNum(min))
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			end := min(i+3, len(s))
			return "", fmt.Errorf("bad percent-encoding %q", s[i:end])
		}
		b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
		i += 2
	}
	return string(b), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// escape percent-encodes what RFC 7512 does not allow literally in a path
// (query false) or query (query true) attribute value.
func escape(s string, query bool) string {
	const hexdigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreservedOrAllowed(c, query) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexdigits[c>>4])
		b.WriteByte(hexdigits[c&15])
	}
	return b.String()
}

func unreservedOrAllowed(c byte, query bool) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '.', '_', '~', ':', '[', ']', '@', '!', '$', '\'', '(', ')', '*', '+', ',':
		return true
	case '&': // pk11-pchar allows "&" in path values
		return !query
	case '/', '?', '|':
		return query
	}
	return false
}

// escapeID percent-encodes every byte, as RFC 7512 recommends for ids.
func escapeID(id []byte) string {
	const hexdigits = "0123456789abcdef"
	b := make([]byte, 0, 3*len(id))
	for _, c := range id {
		b = append(b, '%', hexdigits[c>>4], hexdigits[c&15])
	}
	return string(b)
}

// String prints the URI in canonical order with a pin-value hidden, for
// logs and errors: it is Redacted. A URI printed so does not log in —
// Parse refuses its "pin-value=REDACTED" rather than send that as a PIN;
// pass Full to code that must reach the token.
func (u *URI) String() string { return u.Redacted() }

// Redacted prints the URI with a pin-value replaced by REDACTED.
func (u *URI) Redacted() string { return u.format(true) }

// Full prints the URI with everything, a pin-value included: the form to
// hand to code that opens the token. Do not log it.
func (u *URI) Full() string { return u.format(false) }

func (u *URI) format(redactPIN bool) string {
	var path, query []string
	add := func(name, val string) {
		if val != "" {
			path = append(path, name+"="+escape(val, false))
		}
	}
	add("library-manufacturer", u.LibraryManufacturer)
	add("library-description", u.LibraryDescription)
	add("library-version", u.LibraryVersion)
	add("slot-description", u.SlotDescription)
	add("slot-manufacturer", u.SlotManufacturer)
	if u.SlotID != nil {
		path = append(path, "slot-id="+strconv.FormatUint(uint64(*u.SlotID), 10))
	}
	add("manufacturer", u.Manufacturer)
	add("model", u.Model)
	add("serial", u.Serial)
	add("token", u.Token)
	add("object", u.Object)
	if u.ID != nil {
		path = append(path, "id="+escapeID(u.ID))
	}
	add("type", u.Type)
	addq := func(name, val string) {
		if val != "" {
			query = append(query, name+"="+escape(val, true))
		}
	}
	addq("module-name", u.ModuleName)
	addq("module-path", u.ModulePath)
	addq("pin-source", u.PINSource)
	if u.PINValue != "" {
		if redactPIN {
			query = append(query, "pin-value="+Redaction)
		} else {
			addq("pin-value", u.PINValue)
		}
	}
	if u.MaxSessions > 0 {
		query = append(query, "max-sessions="+strconv.Itoa(u.MaxSessions))
	}
	addq("failover-token", u.FailoverToken)
	if len(u.PeerTokens) > 0 {
		labels := make([]string, len(u.PeerTokens))
		for i, l := range u.PeerTokens {
			labels[i] = strings.ReplaceAll(escape(l, true), ",", "%2C")
		}
		query = append(query, "peer-token="+strings.Join(labels, ","))
	}
	for _, v := range u.Vendor {
		if name, ok := strings.CutPrefix(v[0], "?"); ok {
			addq(name, v[1])
		} else {
			add(v[0], v[1])
		}
	}
	s := "pkcs11:" + strings.Join(path, ";")
	if len(query) > 0 {
		s += "?" + strings.Join(query, "&")
	}
	return s
}

// Clone returns a deep copy of u.
func (u *URI) Clone() *URI {
	c := *u
	if u.SlotID != nil {
		id := *u.SlotID
		c.SlotID = &id
	}
	if u.ID != nil {
		c.ID = append([]byte{}, u.ID...)
	}
	c.Vendor = append([][2]string(nil), u.Vendor...)
	c.PeerTokens = append([]string(nil), u.PeerTokens...)
	return &c
}

// TokenOnly returns a copy of u without the object attributes.
func (u *URI) TokenOnly() *URI {
	c := u.Clone()
	c.Object, c.ID, c.Type = "", nil, ""
	return c
}

// HasObject reports whether u names an object (by label or id).
func (u *URI) HasObject() bool { return u.Object != "" || u.ID != nil }

// HasTokenSelector reports whether u says anything about which slot or
// token it means.
func (u *URI) HasTokenSelector() bool {
	return u.LibraryManufacturer != "" || u.LibraryDescription != "" || u.LibraryVersion != "" ||
		u.SlotDescription != "" || u.SlotManufacturer != "" || u.SlotID != nil ||
		u.Token != "" || u.Manufacturer != "" || u.Serial != "" || u.Model != ""
}

// TokenInfo is what a URI's token attributes are matched against: the
// slot and token information a module reports, padding removed.
type TokenInfo struct {
	LibraryManufacturer string
	LibraryDescription  string
	LibraryVersion      string // "major.minor"
	SlotID              uint
	SlotDescription     string
	SlotManufacturer    string
	Label               string
	Manufacturer        string
	Model               string
	Serial              string
	Firmware            string // "major.minor"; reported, not matched
}

// MatchesToken reports whether the library, slot and token attributes of
// u all match d. It needs no login, so a token is chosen before any PIN is
// spent on it.
func (u *URI) MatchesToken(d TokenInfo) bool {
	eq := func(want, have string) bool { return want == "" || want == have }
	if u.SlotID != nil && *u.SlotID != d.SlotID {
		return false
	}
	if u.LibraryVersion != "" {
		want, have := u.LibraryVersion, d.LibraryVersion
		if !strings.Contains(want, ".") {
			have, _, _ = strings.Cut(have, ".")
		}
		if want != have {
			return false
		}
	}
	return eq(u.LibraryManufacturer, d.LibraryManufacturer) && eq(u.LibraryDescription, d.LibraryDescription) &&
		eq(u.SlotDescription, d.SlotDescription) && eq(u.SlotManufacturer, d.SlotManufacturer) &&
		eq(u.Token, d.Label) && eq(u.Manufacturer, d.Manufacturer) && eq(u.Model, d.Model) && eq(u.Serial, d.Serial)
}

// Describe says in a few words which token d is, for errors and listings.
func (d TokenInfo) Describe() string {
	s := fmt.Sprintf("token %q (serial %s, slot %d", d.Label, d.Serial, d.SlotID)
	if d.Model != "" {
		s += ", " + d.Model
	}
	return s + ")"
}

// URI returns the URI naming exactly this token.
func (d TokenInfo) URI() *URI {
	return &URI{Token: d.Label, Manufacturer: d.Manufacturer, Serial: d.Serial, Model: d.Model}
}

// Redact hides the value of pin-value in s, however it is spelled, so a
// URI can be logged or put in an error. s need not parse: whatever follows
// the first "?" is split at "&", and each pin-value (its name compared
// without case, after unescaping) has its value replaced, the rule
// provider.RedactRef applies to any reference.
func Redact(s string) string {
	head, query, ok := strings.Cut(s, "?")
	if !ok {
		return s
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		if k, err := url.QueryUnescape(k); err == nil && strings.EqualFold(k, "pin-value") {
			parts[i] = "pin-value=REDACTED"
		}
	}
	return head + "?" + strings.Join(parts, "&")
}

func redact(s string) string { return Redact(s) }

// Module returns the module the URI names (module-path, else
// module-name), or "".
func (u *URI) Module() string {
	if u.ModulePath != "" {
		return u.ModulePath
	}
	return u.ModuleName
}
