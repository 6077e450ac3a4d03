package connection

import (
	"log/slog"
	"testing"

	"github.com/offload/offload/sshd/wire"
)

// tosConn records SetTOS calls; the rest of wire.PacketConn is unused.
type tosConn struct {
	wire.PacketConn
	set []int
}

func (c *tosConn) SetTOS(tos int) error { c.set = append(c.set, tos); return nil }

// TestMarkQoS: the first session decides, interactive or bulk; a negative
// value and a nil IPQoS leave the socket alone.
func TestMarkQoS(t *testing.T) {
	for _, c := range []struct {
		qos      *QoS
		sessions []bool // interactive, in order
		want     []int
	}{
		{&QoS{Interactive: 0x48, Bulk: 0x20}, []bool{true, false}, []int{0x48}},
		{&QoS{Interactive: 0x48, Bulk: 0x20}, []bool{false, true}, []int{0x20}},
		{&QoS{Interactive: -1, Bulk: 0x20}, []bool{true, false}, nil},
		{nil, []bool{true}, nil},
	} {
		pc := &tosConn{}
		m := &mux{pc: pc, cfg: &settings{Config: Config{IPQoS: c.qos}}, log: slog.New(slog.DiscardHandler)}
		for _, interactive := range c.sessions {
			m.markQoS(interactive)
		}
		if len(pc.set) != len(c.want) || (len(c.want) > 0 && pc.set[0] != c.want[0]) {
			t.Errorf("IPQoS %+v, sessions %v: set %v, want %v", c.qos, c.sessions, pc.set, c.want)
		}
	}
}
