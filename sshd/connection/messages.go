package connection

import (
	"encoding/binary"

	"github.com/offload/offload/sshd/wire"
)

// Channel open failure reason codes (RFC 4254 §5.1).
const (
	openAdminProhibited   = 1
	openConnectFailed     = 2
	openUnknownType       = 3
	openResourceShortage  = 4
	dataHeaderLen         = 9  // msg, channel, length
	extDataHeaderLen      = 13 // msg, channel, type, length
	extendedDataStderr    = 1
	maxRequestTypeLen     = 64
	maxQueuedRequests     = 256     // OpenSSH with SendEnv=* sends one env per variable
	maxQueuedReqBytes     = 1 << 20 // bytes of pending requests per channel
	maxGlobalRequestTypes = 128
)

// openMsg is SSH_MSG_CHANNEL_OPEN.
type openMsg struct {
	kind      string
	sender    uint32
	window    uint32
	maxPacket uint32
	extra     []byte // type-specific data, aliases the packet
}

func parseOpen(p []byte) (openMsg, error) {
	r := wire.NewReader(p[1:])
	m := openMsg{
		kind:      string(r.Bytes("channel type")),
		sender:    r.Uint32("sender channel"),
		window:    r.Uint32("initial window size"),
		maxPacket: r.Uint32("maximum packet size"),
	}
	m.extra = r.Rest()
	return m, r.Err()
}

// requestMsg is SSH_MSG_CHANNEL_REQUEST or SSH_MSG_GLOBAL_REQUEST; payload
// is owned by the message (copied from the packet).
type requestMsg struct {
	kind      string
	wantReply bool
	payload   []byte
}

func parseChannelRequest(p []byte) (requestMsg, error) {
	r := wire.NewReader(p[5:])
	m := requestMsg{kind: string(r.Bytes("request type")), wantReply: r.Bool("want reply")}
	m.payload = append([]byte(nil), r.Rest()...)
	return m, r.Err()
}

func parseGlobalRequest(p []byte) (requestMsg, error) {
	r := wire.NewReader(p[1:])
	m := requestMsg{kind: string(r.Bytes("request name")), wantReply: r.Bool("want reply")}
	m.payload = r.Rest()
	return m, r.Err()
}

// channelID reads the recipient channel of a channel message.
func channelID(p []byte) (uint32, bool) {
	if len(p) < 5 {
		return 0, false
	}
	return binary.BigEndian.Uint32(p[1:5]), true
}

func appendOpenConfirm(b []byte, remote, local, window, maxPacket uint32) []byte {
	b = append(b, wire.MsgChannelOpenConfirm)
	b = wire.AppendUint32(b, remote)
	b = wire.AppendUint32(b, local)
	b = wire.AppendUint32(b, window)
	return wire.AppendUint32(b, maxPacket)
}

func appendOpenFailure(b []byte, remote, reason uint32, desc string) []byte {
	b = append(b, wire.MsgChannelOpenFailure)
	b = wire.AppendUint32(b, remote)
	b = wire.AppendUint32(b, reason)
	b = wire.AppendString(b, desc)
	return wire.AppendString(b, "")
}

// appendChannelMsg appends a message that is just a number and a channel.
func appendChannelMsg(b []byte, msg byte, remote uint32) []byte {
	return wire.AppendUint32(append(b, msg), remote)
}

func appendWindowAdjust(b []byte, remote, n uint32) []byte {
	return wire.AppendUint32(appendChannelMsg(b, wire.MsgChannelWindowAdjust, remote), n)
}

func appendRequestHeader(b []byte, remote uint32, kind string, wantReply bool) []byte {
	b = appendChannelMsg(b, wire.MsgChannelRequest, remote)
	b = wire.AppendString(b, kind)
	return wire.AppendBool(b, wantReply)
}

// putDataHeader writes a DATA or EXTENDED_DATA header ending at b[end]
// for n payload bytes and returns where the header starts.
func putDataHeader(b []byte, end int, remote uint32, ext uint32, n int) int {
	if ext == 0 {
		start := end - dataHeaderLen
		b[start] = wire.MsgChannelData
		binary.BigEndian.PutUint32(b[start+1:], remote)
		binary.BigEndian.PutUint32(b[start+5:], uint32(n))
		return start
	}
	start := end - extDataHeaderLen
	b[start] = wire.MsgChannelExtendedData
	binary.BigEndian.PutUint32(b[start+1:], remote)
	binary.BigEndian.PutUint32(b[start+5:], ext)
	binary.BigEndian.PutUint32(b[start+9:], uint32(n))
	return start
}

// parseData returns the payload of DATA or EXTENDED_DATA (aliasing p) and
// the extended type (0 for DATA).
func parseData(p []byte) (data []byte, ext uint32, ok bool) {
	hdr := dataHeaderLen
	if p[0] == wire.MsgChannelExtendedData {
		hdr = extDataHeaderLen
		if len(p) < hdr {
			return nil, 0, false
		}
		ext = binary.BigEndian.Uint32(p[5:9])
	}
	if len(p) < hdr {
		return nil, 0, false
	}
	n := binary.BigEndian.Uint32(p[hdr-4 : hdr])
	if uint64(n) != uint64(len(p)-hdr) {
		return nil, 0, false
	}
	return p[hdr:], ext, true
}
