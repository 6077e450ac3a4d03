package monitor

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/transport"
)

func marshalState(t testing.TB, st *handoverState) []byte {
	t.Helper()
	b, err := st.marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

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
	other := marshalState(t, &handoverState{Version: 99})
	for _, bad := range []string{"", "{", string(other)} {
		if _, err := Resume(cfg, &Handover{State: []byte(bad)}); err == nil {
			t.Errorf("state %q accepted", bad)
		}
	}
	st := marshalState(t, &handoverState{Version: handoverVersion, HostPublicKeys: [][]byte{k2.Marshal(), k3.Marshal()},
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

// TestResumeServes: a keeper answers a post-auth process's re-exchange
// signature for its connection (not for another's), and once the
// connection has ended tells the process to go and waits for it.
func TestResumeServes(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, pubs, err := transport.NewHostKeySigner([]crypto.Signer{priv}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs, err := ipc.Pair()
	if err != nil {
		t.Fatal(err)
	}
	st := marshalState(t, &handoverState{Version: handoverVersion, HostPublicKeys: [][]byte{pubs[0].Marshal()},
		Children: []childState{{Name: "offload-sshd: u", Key: "u", User: "u", File: 0, Session: -1,
			Conns: []connState{{ID: 7, Local: "127.0.0.1:22", Remote: "127.0.0.1:5555", User: "u", SessionID: make([]byte, 32)}}}}})
	m, err := Resume(Config{HostKeys: signer, HostPublicKeys: pubs}, &Handover{State: st, Files: []*os.File{mine}})
	if err != nil {
		t.Fatal(err)
	}
	told := make(chan uint64, 1)
	post, err := ipc.NewPeer(theirs, func(msg *ipc.Message) {
		if cc, err := ipc.ParseCloseConn(msg.Payload); msg.Type == ipc.TypeCloseConn && err == nil {
			told <- cc.ConnID
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	go post.Run()
	defer post.Close()
	ctx := context.Background()
	req := &ipc.SignRequest{ConnID: 7, Alg: ssh.KeyAlgoED25519, Pub: pubs[0].Marshal(), H: make([]byte, 32)}
	if _, err := post.Call(ctx, ipc.TypeSign, req.Marshal()); err != nil {
		t.Fatalf("re-exchange signature: %v", err)
	}
	req.ConnID = 8
	if _, err := post.Call(ctx, ipc.TypeSign, req.Marshal()); err == nil {
		t.Error("signed for a connection that is not the process's")
	}
	post.Notify(ipc.TypeConnDone, ipc.NewConnDone(7, nil, ipc.OutcomeClosed, nil).Marshal())
	if id := <-told; id != 0 {
		t.Fatalf("told to close connection %d, want the process to end (0)", id)
	}
	post.Close() // the process ends
	m.Wait()
	if n := m.Sessions(); n != 0 {
		t.Errorf("%d connections left", n)
	}
}
