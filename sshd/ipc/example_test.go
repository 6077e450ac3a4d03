package ipc_test

import (
	"context"
	"fmt"

	"github.com/offload/offload/sshd/ipc"
)

// Two processes' ends of a socket pair (here in one process): the child
// asks the monitor to sign, the monitor answers with a reply.
func ExamplePeer() {
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
		monitor.Reply(m, []byte("signature of connection "+fmt.Sprint(req.ConnID)), nil)
	})
	child, _ := ipc.NewPeer(childEnd, func(*ipc.Message) {})
	go monitor.Run()
	go child.Run()
	defer monitor.Close()
	defer child.Close()

	req := &ipc.SignRequest{ConnID: 7, Alg: "ssh-ed25519", Pub: []byte("key"), H: make([]byte, 32)}
	sig, err := child.Call(context.Background(), ipc.TypeSign, req.Marshal())
	fmt.Println(string(sig), err)
	// Output: signature of connection 7 <nil>
}
