package auth

import (
	"testing"

	"github.com/offload/offload/sshd/wire"
)

func FuzzParseInfoResponse(f *testing.F) {
	b := wire.AppendUint32([]byte{msgInfoResponse}, 2)
	f.Add(wire.AppendString(wire.AppendString(b, "pw"), "123456"), uint8(2))
	f.Add([]byte{msgInfoResponse, 0xff, 0xff, 0xff, 0xff}, uint8(1))
	f.Fuzz(func(t *testing.T, p []byte, want uint8) {
		resp, err := parseInfoResponse(p, int(want))
		if err != nil {
			return
		}
		if len(resp) != int(want) {
			t.Fatalf("%d responses for %d prompts", len(resp), want)
		}
		for _, r := range resp {
			if len(r) > MaxResponseLen {
				t.Fatalf("response of %d bytes", len(r))
			}
		}
	})
}
