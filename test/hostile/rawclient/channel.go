package rawclient

import (
	"errors"
	"fmt"

	"github.com/offload/offload/sshd/wire"
)

// Channel is an open session channel.
type Channel struct {
	c *Conn
	// Local is our id, Remote the server's.
	Local, Remote uint32
	// Window is what the server lets us send; MaxPacket its largest data.
	Window, MaxPacket uint32
}

// OpenSession opens a session channel with our id local and a receive
// window of window bytes.
func (c *Conn) OpenSession(local, window uint32) (*Channel, error) {
	return c.OpenSessionWith(local, window, 32768)
}

// ErrOpenRefused is returned when the server answers CHANNEL_OPEN with
// CHANNEL_OPEN_FAILURE.
var ErrOpenRefused = errors.New("rawclient: channel open refused")

// OpenSessionWith is OpenSession with our maximum packet size too.
func (c *Conn) OpenSessionWith(local, window, maxPacket uint32) (*Channel, error) {
	p := wire.AppendString([]byte{wire.MsgChannelOpen}, "session")
	p = wire.AppendUint32(p, local)
	p = wire.AppendUint32(p, window)
	p = wire.AppendUint32(p, maxPacket)
	if err := c.WritePacket(p); err != nil {
		return nil, err
	}
	reply, err := c.Next()
	if err != nil {
		return nil, err
	}
	if reply[0] == wire.MsgChannelOpenFailure {
		return nil, ErrOpenRefused
	}
	if reply[0] != wire.MsgChannelOpenConfirm {
		return nil, fmt.Errorf("rawclient: got message %d for CHANNEL_OPEN", reply[0])
	}
	r := wire.NewReader(reply[1:])
	ch := &Channel{c: c}
	if r.Uint32("recipient") != local {
		return nil, errors.New("rawclient: open confirmation for another channel")
	}
	ch.Local = local
	ch.Remote = r.Uint32("sender")
	ch.Window = r.Uint32("window")
	ch.MaxPacket = r.Uint32("max packet")
	return ch, r.Err()
}

// Request sends a channel request; with wantReply it waits for SUCCESS
// or FAILURE, dropping window adjustments on the way.
func (ch *Channel) Request(name string, wantReply bool, fields []byte) error {
	p := wire.AppendUint32([]byte{wire.MsgChannelRequest}, ch.Remote)
	p = wire.AppendString(p, name)
	p = wire.AppendBool(p, wantReply)
	if err := ch.c.WritePacket(append(p, fields...)); err != nil {
		return err
	}
	if !wantReply {
		return nil
	}
	for {
		m, err := ch.c.Next()
		if err != nil {
			return err
		}
		switch m[0] {
		case wire.MsgChannelSuccess:
			return nil
		case wire.MsgChannelFailure:
			return fmt.Errorf("rawclient: channel request %q refused", name)
		case wire.MsgChannelWindowAdjust:
			continue
		}
		return fmt.Errorf("rawclient: got message %d waiting for the %q reply", m[0], name)
	}
}

// Exec starts command on the channel.
func (ch *Channel) Exec(command string) error {
	return ch.Request("exec", true, wire.AppendString(nil, command))
}

// DataPacket builds CHANNEL_DATA for the channel without sending it.
func (ch *Channel) DataPacket(b []byte) []byte {
	return DataPacket(ch.Remote, b)
}

// DataPacket builds CHANNEL_DATA for any recipient id.
func DataPacket(recipient uint32, b []byte) []byte {
	p := wire.AppendUint32([]byte{wire.MsgChannelData}, recipient)
	return wire.AppendBytes(p, b)
}

// WindowAdjustPacket builds CHANNEL_WINDOW_ADJUST for any recipient id.
func WindowAdjustPacket(recipient, n uint32) []byte {
	p := wire.AppendUint32([]byte{wire.MsgChannelWindowAdjust}, recipient)
	return wire.AppendUint32(p, n)
}

// Send writes b as CHANNEL_DATA packets of at most MaxPacket bytes,
// ignoring the window: callers that want to respect it check Window.
func (ch *Channel) Send(b []byte) error {
	for len(b) > 0 {
		n := min(len(b), int(ch.MaxPacket))
		if err := ch.c.WritePacket(ch.DataPacket(b[:n])); err != nil {
			return err
		}
		b = b[n:]
		ch.Window -= uint32(min(uint64(n), uint64(ch.Window)))
	}
	return nil
}
