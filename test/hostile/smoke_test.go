package hostile

import (
	"testing"

	"github.com/offload/offload/test/hostile/harness"
	"github.com/offload/offload/test/hostile/rawclient"
)

// TestRawClientLogin proves the raw client right before it is used to
// break things: every cipher, strict kex, a client rekey, publickey login
// and a session channel.
func TestRawClientLogin(t *testing.T) {
	srv := harness.Start(t, nil)
	for _, su := range suites {
		t.Run(su.name, func(t *testing.T) {
			rc, err := rawclient.Dial(srv.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			o := &su.opts
			if err := rc.Handshake(o); err != nil {
				t.Fatal(err)
			}
			if !rc.Strict {
				t.Error("strict kex not negotiated")
			}
			if err := rc.Rekey(o); err != nil {
				t.Fatalf("rekey: %v", err)
			}
			if err := rc.AuthPublicKey(srv.User, srv.Signer); err != nil {
				t.Fatal(err)
			}
			ch, err := rc.OpenSession(0, 1<<20)
			if noConnectionLayer(err) {
				t.Skip("no connection layer yet")
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := ch.Exec("true"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
