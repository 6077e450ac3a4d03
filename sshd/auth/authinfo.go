package auth

import (
	"encoding/base64"
	"encoding/binary"
	"strconv"

	"github.com/offload/offload/sshd/wire"
)

// publicKeyInfo is the line of a publickey success in the session's
// authentication information (OpenSSH's ExposeAuthInfo): the method, the
// key's type and its base64 wire form as the client sent it (a
// certificate stays a certificate), and for a security key the
// signature's counter.
func publicKeyInfo(blob []byte, sig *signature) string {
	line := methodPublicKey
	r := wire.NewReader(blob)
	if typ := r.String("key type"); r.Err() == nil { // a key the request was verified with
		line += " " + typ + " " + base64.StdEncoding.EncodeToString(blob)
	}
	if sig != nil && sig.sk && len(sig.Rest) >= 5 { // flags, then the counter
		line += " signature count = " + strconv.FormatUint(uint64(binary.BigEndian.Uint32(sig.Rest[1:5])), 10)
	}
	return line
}
