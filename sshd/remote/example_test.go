package remote_test

import (
	"fmt"

	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/remote"
)

// A child's transport signs through the monitor: here both ends of the
// socket pair are in one process, and the "monitor" answers each
// SignRequest with a made-up signature.
func ExampleSigner() {
	monitorEnd, childEnd, err := ipc.Pair()
	if err != nil {
		panic(err)
	}
	var monitor *ipc.Peer
	monitor, _ = ipc.NewPeer(monitorEnd, func(m *ipc.Message) {
		req, err := ipc.ParseSignRequest(m.Payload)
		if err != nil {
			monitor.Reply(m, nil, err)
			return
		}
		monitor.Reply(m, []byte(fmt.Sprintf("%s signature for connection %d", req.Alg, req.ConnID)), nil)
	})
	child, _ := ipc.NewPeer(childEnd, func(*ipc.Message) {})
	go monitor.Run()
	go child.Run()
	defer monitor.Close()
	defer child.Close()

	s := &remote.Signer{Peer: child, ConnID: 7}
	sig, err := s.SignExchange("ssh-ed25519", []byte("host key"), make([]byte, 32))
	fmt.Println(string(sig), err)
	fmt.Println(s.HostKeyProvenance([]byte("host key")))
	// Output:
	// ssh-ed25519 signature for connection 7 <nil>
	// the monitor
}
