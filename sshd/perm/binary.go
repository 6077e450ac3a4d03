package perm

import (
	"fmt"

	"github.com/offload/offload/sshd/wire"
)

// The binary form of Permissions is how the monitor gives a login to the
// post-auth process (sshd/ipc's Adopt): SSH wire types in a fixed order,
// each list preceded by whether it is there at all, since nil and empty
// differ (a nil PermitOpen permits any target, an empty one none).

// Bounds of a decoded Permissions.
const (
	maxField   = 64 << 10 // one string
	maxEntries = 4096     // one list
)

// fields are p's fields by kind, in their order on the wire: MarshalBinary
// and UnmarshalBinary walk the same lists.
func (p *Permissions) fields() ([]*string, []*[]string, []*bool) {
	return []*string{&p.User, &p.Method, &p.KeyFingerprint, &p.ForceCommand},
		[]*[]string{&p.Environment, &p.PermitOpen, &p.PermitListen, &p.AuthInfo},
		[]*bool{&p.NoPTY, &p.NoPortForwarding, &p.NoAgentForwarding, &p.NoX11Forwarding, &p.NoUserRC}
}

// MarshalBinary encodes p.
func (p *Permissions) MarshalBinary() ([]byte, error) {
	strs, lists, bools := p.fields()
	var b []byte
	for _, s := range strs {
		b = wire.AppendString(b, *s)
	}
	for _, l := range lists {
		b = wire.AppendOptionalStrings(b, *l)
	}
	for _, v := range bools {
		b = wire.AppendBool(b, *v)
	}
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded, bounded; trailing
// bytes are an error.
func (p *Permissions) UnmarshalBinary(b []byte) error {
	var q Permissions
	strs, lists, bools := q.fields()
	r := wire.NewReader(b)
	for _, s := range strs {
		*s = r.StringMax("string", maxField)
	}
	for _, l := range lists {
		*l = r.OptionalStrings("list", maxEntries, maxField)
	}
	for _, v := range bools {
		*v = r.StrictBool("flag")
	}
	if err := r.Done(); err != nil {
		return fmt.Errorf("perm: %w", err)
	}
	*p = q
	return nil
}
