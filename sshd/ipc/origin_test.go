package ipc

import "testing"

func TestAEADOriginRoundTrip(t *testing.T) {
	roundTrip(t, "AEADOrigin", &AEADOrigin{ConnID: 7, Handle: 3, Out: true, Seq: 5, Nonce: make([]byte, 12)},
		(*AEADOrigin).Marshal, ParseAEADOrigin)
}

func FuzzAEADOrigin(f *testing.F) {
	fuzzParse(f, &AEADOrigin{ConnID: 1, Handle: 2, Seq: 3, Nonce: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		(*AEADOrigin).Marshal, ParseAEADOrigin)
}
