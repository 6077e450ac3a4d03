package monitor

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"testing"

	"golang.org/x/crypto/ssh"
)

func testPub(t *testing.T) ssh.PublicKey {
	t.Helper()
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestResumeState: a keeper refuses a state it cannot read, keeps only the
// host keys both it and the stopped monitor have, and with no process it
// could take over has nothing to wait for.
func TestResumeState(t *testing.T) {
	k1, k2, k3 := testPub(t), testPub(t), testPub(t)
	cfg := Config{HostKeys: refuseSigner{}, HostPublicKeys: []ssh.PublicKey{k1, k2}}
	for _, bad := range []string{"", "{", `{"Version":99}`} {
		if _, err := Resume(cfg, &Handover{State: []byte(bad)}); err == nil {
			t.Errorf("state %q accepted", bad)
		}
	}
	st, _ := json.Marshal(&handoverState{Version: handoverVersion, HostPublicKeys: [][]byte{k2.Marshal(), k3.Marshal()},
		Children: []childState{{Name: "x", Key: "x", File: 5, Session: -1, Conns: []connState{{ID: 1, Local: "a", Remote: "b"}}}}})
	m, err := Resume(cfg, &Handover{State: st})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.cfg.HostPublicKeys) != 1 || string(m.cfg.HostPublicKeys[0].Marshal()) != string(k2.Marshal()) {
		t.Errorf("kept host keys %d, want k2 only", len(m.cfg.HostPublicKeys))
	}
	if n := m.Sessions(); n != 0 {
		t.Errorf("%d connections of a process without a socket kept", n)
	}
	m.Wait() // nothing to wait for
	// No host key opened: nothing signs, the sessions are kept anyway.
	m, err = Resume(Config{}, &Handover{State: st})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.cfg.HostPublicKeys) != 0 || m.isHostKey("ssh-ed25519", k2.Marshal()) {
		t.Errorf("a keeper without keys claims %d", len(m.cfg.HostPublicKeys))
	}
}
