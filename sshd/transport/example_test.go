package transport_test

import (
	"fmt"
	"strings"

	"github.com/offload/offload/sshd/transport"
)

// ExampleAlgorithms lists the key exchanges on by default with the
// registry primitives each is built from.
func ExampleAlgorithms() {
	for _, a := range transport.Algorithms() {
		if a.Kind == transport.KindKex && a.Default {
			fmt.Printf("%s: %s\n", a.Name, strings.Join(a.Primitives, " "))
		}
	}
	// Output:
	// mlkem768x25519-sha256: ml-kem-768 x25519 sha256
	// sntrup761x25519-sha512: sntrup761 x25519 sha512
	// sntrup761x25519-sha512@openssh.com: sntrup761 x25519 sha512
	// curve25519-sha256: x25519 sha256
	// curve25519-sha256@libssh.org: x25519 sha256
}
