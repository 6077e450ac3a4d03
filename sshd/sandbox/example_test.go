package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/offload/offload/sshd/sandbox"
)

// A root process reads a user's file with that user's permissions (here
// the running user's own, which any process may take).
func ExampleOpenAs() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "authorized_keys")
	os.WriteFile(path, []byte("ssh-ed25519 AAAA...\n"), 0o600)

	me := sandbox.Identity{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
	f, err := sandbox.OpenAs(me, path, os.O_RDONLY)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	fmt.Println("opened as uid", me.Uid == uint32(os.Getuid()))
	// Output: opened as uid true
}
