package transport

import (
	"github.com/offload/offload/sshd/wire"
)

// parseExtInfo decodes SSH_MSG_EXT_INFO into name/value pairs; it backs
// the fuzz target and tests, the server itself ignores a client's
// EXT_INFO.
func parseExtInfo(p []byte) (map[string]string, error) {
	r := wire.NewReader(p)
	if r.Byte("message") != wire.MsgExtInfo {
		return nil, protocolError("not an EXT_INFO")
	}
	n := r.Uint32("nr-extensions")
	if uint64(n) > uint64(r.Len()/8) {
		return nil, protocolError("EXT_INFO claims %d extensions in %d bytes", n, r.Len())
	}
	out := make(map[string]string, n)
	for i := uint32(0); i < n && r.Err() == nil; i++ {
		k := r.String("extension-name")
		out[k] = r.String("extension-value")
	}
	if err := r.Done(); err != nil {
		return nil, &DisconnectError{Reason: wire.DisconnectProtocolError, Message: "malformed EXT_INFO", Err: err}
	}
	return out, nil
}
