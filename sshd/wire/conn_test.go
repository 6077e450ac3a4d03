package wire

import "testing"

func TestKnown(t *testing.T) {
	for _, k := range []byte{MsgDisconnect, MsgExtInfo, MsgKexInit, MsgNewKeys, MsgKexECDHInit, 49,
		MsgUserAuthRequest, MsgUserAuthPKOK, 79, MsgGlobalRequest, MsgRequestFailure, MsgChannelOpen, MsgChannelFailure} {
		if !Known(k) {
			t.Errorf("Known(%d) = false", k)
		}
	}
	for _, u := range []byte{0, 8, 19, 83, 89, 101, 127, 128, 192, 255} {
		if Known(u) {
			t.Errorf("Known(%d) = true", u)
		}
	}
}
