package wire

import "fmt"

// Bounded reads, for the encodings offload's processes exchange (the
// monitor trusts nothing a child sends): each field has a bound, and a
// boolean is 0 or 1, so that an accepted encoding is the only one of its
// value.

// BytesMax reads a length-prefixed string of at most max bytes.
func (r *Reader) BytesMax(field string, max int) []byte {
	b := r.Bytes(field)
	if len(b) > max {
		r.fail(field, fmt.Errorf("%d bytes, at most %d", len(b), max))
		return nil
	}
	return b
}

// StringMax reads a length-prefixed string of at most max bytes.
func (r *Reader) StringMax(field string, max int) string { return string(r.BytesMax(field, max)) }

// StrictBool reads a boolean that must be encoded as 0 or 1.
func (r *Reader) StrictBool(field string) bool {
	v := r.Byte(field)
	if v > 1 {
		r.fail(field, fmt.Errorf("boolean %d, want 0 or 1", v))
		return false
	}
	return v == 1
}

// Count reads the uint32 number of entries of a list, at most max; 0
// once the Reader has failed.
func (r *Reader) Count(field string, max int) int {
	n := r.Uint32(field)
	if uint64(n) > uint64(max) {
		r.fail(field, fmt.Errorf("%d entries, at most %d", n, max))
		return 0
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

// Int64 reads a big-endian two's complement int64.
func (r *Reader) Int64(field string) int64 { return int64(r.Uint64(field)) }

// Fail makes r fail at field with err, as a malformed field would: for a
// check of the caller's (an order, a range) on what it read.
func (r *Reader) Fail(field string, err error) { r.fail(field, err) }

// AppendOptionalStrings appends a list whose absence counts: a presence
// flag, then, when l is not nil, its count and strings. A nil list and an
// empty one stay apart (a setting left to its default, and one set to
// nothing).
func AppendOptionalStrings(b []byte, l []string) []byte {
	b = AppendBool(b, l != nil)
	if l == nil {
		return b
	}
	b = AppendUint32(b, uint32(len(l)))
	for _, s := range l {
		b = AppendString(b, s)
	}
	return b
}

// OptionalStrings reads what AppendOptionalStrings wrote: nil when the
// list is absent, else at most max entries of at most maxLen bytes each.
func (r *Reader) OptionalStrings(field string, max, maxLen int) []string {
	if !r.StrictBool(field) {
		return nil
	}
	n := r.Count(field, max)
	out := make([]string, 0, min(n, 64))
	for i := 0; i < n && r.Err() == nil; i++ {
		out = append(out, r.StringMax(field, maxLen))
	}
	return out
}
