package krl_test

import (
	"crypto/ed25519"
	"fmt"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/krl"
)

func Example() {
	// an empty KRL, as `ssh-keygen -k -f krl /dev/null` writes one
	data := append(append([]byte(nil), krl.Magic...),
		0, 0, 0, 1, // format version
		0, 0, 0, 0, 0, 0, 0, 1, // KRL version
		0, 0, 0, 0, 0, 0, 0, 0, // generated
		0, 0, 0, 0, 0, 0, 0, 0, // flags
		0, 0, 0, 0, // reserved
		0, 0, 0, 0) // comment
	list, err := krl.Parse(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	pub, _, _ := ed25519.GenerateKey(nil)
	key, _ := ssh.NewPublicKey(pub)
	fmt.Println(list.Revoked(key))
	// Output: false
}
