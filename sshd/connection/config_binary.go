package connection

import (
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/offload/offload/sshd/wire"
)

// The binary form of a Config is how the monitor gives a connection's
// settings to the post-auth process (sshd/ipc's Adopt): SSH wire types in
// a fixed order; lists, maps and pointers preceded by whether they are
// there at all, since nil differs from empty (a nil PermitOpen permits any
// target, an empty one none; nil Subsystems is the default sftp). Logger,
// Sessions and OpenHeldPAMSession are not encoded: the receiving process
// sets its own.

// Bounds of a decoded Config.
const (
	maxSettingsField   = 64 << 10 // one string
	maxSettingsEntries = 4096     // one list or map
)

// configFields are a Config's encoded fields by kind, in their order on
// the wire: MarshalBinary and UnmarshalBinary walk the same lists.
type configFields struct {
	u32s  []*uint32
	ints  []*int
	bools []*bool
	strs  []*string
	lists []*[]string
	durs  []*time.Duration
	masks []**fs.FileMode
}

func (c *Config) fields() *configFields {
	return &configFields{
		u32s: []*uint32{&c.WindowSize, &c.WindowMax, &c.MaxPacket},
		ints: []*int{&c.MaxSessions, &c.MaxChannels, &c.ClientAliveCountMax, (*int)(&c.AllowTCPForwarding),
			(*int)(&c.AllowStreamLocalForwarding), (*int)(&c.GatewayPorts), &c.MaxListeners, &c.X11MaxDisplays},
		bools: []*bool{&c.PaceSends, &c.NoTTY, &c.NoUserRC, &c.ExposeAuthInfo, &c.NoMotd, &c.NoLastLog, &c.Nologin,
			&c.DisableForwarding, &c.StreamLocalBindUnlink, &c.NoAgentForwarding, &c.X11Forwarding, &c.X11NoLocalhost},
		strs:  []*string{&c.ForceCommand, &c.LoginMessages, &c.ChrootDirectory, &c.XAuthLocation},
		lists: []*[]string{&c.AcceptEnv, &c.SFTPHelper, &c.SetEnv, &c.PermitUserEnvironment, &c.PermitOpen, &c.PermitListen},
		durs:  []*time.Duration{&c.ClientAliveInterval, &c.UnusedConnectionTimeout},
		masks: []**fs.FileMode{&c.Umask, &c.StreamLocalBindMask},
	}
}

// MarshalBinary encodes c's settings (not its Logger, Sessions or
// OpenHeldPAMSession).
func (c *Config) MarshalBinary() ([]byte, error) {
	f := c.fields()
	var b []byte
	for _, v := range f.u32s {
		b = wire.AppendUint32(b, *v)
	}
	for _, v := range f.ints {
		b = wire.AppendUint64(b, uint64(int64(*v)))
	}
	for _, v := range f.bools {
		b = wire.AppendBool(b, *v)
	}
	for _, v := range f.strs {
		b = wire.AppendString(b, *v)
	}
	return c.appendRest(f, b), nil
}

func (c *Config) appendRest(f *configFields, b []byte) []byte {
	for _, v := range f.lists {
		b = wire.AppendOptionalStrings(b, *v)
	}
	for _, v := range f.durs {
		b = wire.AppendUint64(b, uint64(*v))
	}
	for _, v := range f.masks {
		b = wire.AppendBool(b, *v != nil)
		if *v != nil {
			b = wire.AppendUint32(b, uint32(**v))
		}
	}
	b = appendSubsystems(b, c.Subsystems)
	b = appendQoS(b, c.IPQoS)
	b = wire.AppendBool(b, c.X11DisplayOffset != nil)
	if c.X11DisplayOffset != nil {
		b = wire.AppendUint64(b, uint64(int64(*c.X11DisplayOffset)))
	}
	b = appendAccount(b, c.Account)
	return appendTimeouts(b, c.ChannelTimeouts)
}

// appendSubsystems encodes m with its keys sorted (the decoder wants
// them so: one encoding per map).
func appendSubsystems(b []byte, m map[string]string) []byte {
	b = wire.AppendBool(b, m != nil)
	if m == nil {
		return b
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = wire.AppendUint32(b, uint32(len(keys)))
	for _, k := range keys {
		b = wire.AppendString(wire.AppendString(b, k), m[k])
	}
	return b
}

func appendQoS(b []byte, q *QoS) []byte {
	b = wire.AppendBool(b, q != nil)
	if q == nil {
		return b
	}
	return wire.AppendUint64(wire.AppendUint64(b, uint64(int64(q.Interactive))), uint64(int64(q.Bulk)))
}

func appendAccount(b []byte, a *Account) []byte {
	b = wire.AppendBool(b, a != nil)
	if a == nil {
		return b
	}
	b = wire.AppendString(b, a.Name)
	b = wire.AppendUint32(wire.AppendUint32(b, a.UID), a.GID)
	b = wire.AppendBool(b, a.Groups != nil)
	if a.Groups != nil {
		b = wire.AppendUint32(b, uint32(len(a.Groups)))
		for _, g := range a.Groups {
			b = wire.AppendUint32(b, g)
		}
	}
	return wire.AppendString(wire.AppendString(b, a.Home), a.Shell)
}

func appendTimeouts(b []byte, ts []ChannelTimeout) []byte {
	b = wire.AppendBool(b, ts != nil)
	if ts == nil {
		return b
	}
	b = wire.AppendUint32(b, uint32(len(ts)))
	for _, t := range ts {
		b = wire.AppendUint64(wire.AppendString(b, t.Type), uint64(t.Timeout))
	}
	return b
}

// UnmarshalBinary decodes what MarshalBinary encoded into c, bounded;
// trailing bytes are an error. Logger, Sessions and OpenHeldPAMSession
// are left as they were.
func (c *Config) UnmarshalBinary(p []byte) error {
	n := Config{Logger: c.Logger, Sessions: c.Sessions, OpenHeldPAMSession: c.OpenHeldPAMSession}
	r := wire.NewReader(p)
	f := n.fields()
	for _, v := range f.u32s {
		*v = r.Uint32("size")
	}
	for _, v := range f.ints {
		*v = int(r.Int64("number"))
	}
	for _, v := range f.bools {
		*v = r.StrictBool("flag")
	}
	for _, v := range f.strs {
		*v = r.StringMax("string", maxSettingsField)
	}
	readRest(r, &n, f)
	if err := r.Done(); err != nil {
		return fmt.Errorf("connection: settings: %w", err)
	}
	*c = n
	return nil
}

func readRest(r *wire.Reader, c *Config, f *configFields) {
	for _, v := range f.lists {
		*v = r.OptionalStrings("list", maxSettingsEntries, maxSettingsField)
	}
	for _, v := range f.durs {
		*v = time.Duration(r.Int64("duration"))
	}
	for _, v := range f.masks {
		if r.StrictBool("mask") {
			m := fs.FileMode(r.Uint32("mask"))
			*v = &m
		}
	}
	c.Subsystems = readSubsystems(r)
	c.IPQoS = readQoS(r)
	if r.StrictBool("x11 display offset") {
		off := int(r.Int64("x11 display offset"))
		c.X11DisplayOffset = &off
	}
	c.Account = readAccount(r)
	c.ChannelTimeouts = readTimeouts(r)
}

// readSubsystems wants the names sorted, each once: one encoding per map.
func readSubsystems(r *wire.Reader) map[string]string {
	if !r.StrictBool("subsystems") {
		return nil
	}
	out := map[string]string{}
	prev := ""
	for i, n := 0, r.Count("subsystems", maxSettingsEntries); i < n && r.Err() == nil; i++ {
		k, v := r.StringMax("subsystem", maxSettingsField), r.StringMax("subsystem command", maxSettingsField)
		if i > 0 && k <= prev {
			r.Fail("subsystems", fmt.Errorf("name %q out of order", k))
		}
		out[k], prev = v, k
	}
	return out
}

func readQoS(r *wire.Reader) *QoS {
	if !r.StrictBool("ipqos") {
		return nil
	}
	return &QoS{Interactive: int(r.Int64("ipqos interactive")), Bulk: int(r.Int64("ipqos bulk"))}
}

func readAccount(r *wire.Reader) *Account {
	if !r.StrictBool("account") {
		return nil
	}
	a := &Account{Name: r.StringMax("account name", maxSettingsField), UID: r.Uint32("uid"), GID: r.Uint32("gid")}
	if r.StrictBool("groups") {
		n := r.Count("groups", maxSettingsEntries)
		a.Groups = make([]uint32, 0, min(n, 64))
		for i := 0; i < n && r.Err() == nil; i++ {
			a.Groups = append(a.Groups, r.Uint32("group"))
		}
	}
	a.Home, a.Shell = r.StringMax("home", maxSettingsField), r.StringMax("shell", maxSettingsField)
	return a
}

func readTimeouts(r *wire.Reader) []ChannelTimeout {
	if !r.StrictBool("channel timeouts") {
		return nil
	}
	n := r.Count("channel timeouts", maxSettingsEntries)
	out := make([]ChannelTimeout, 0, min(n, 64))
	for i := 0; i < n && r.Err() == nil; i++ {
		out = append(out, ChannelTimeout{Type: r.StringMax("channel type", maxSettingsField),
			Timeout: time.Duration(r.Int64("timeout"))})
	}
	return out
}
