package remote

import (
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/sandbox"
)

// Become drops the child's privileges to the identity its configuration
// names, if any (sandbox.DropTo): the monitor starts its children as
// itself, so that a program only root may execute can run them, and each
// drops its privileges first thing.
func Become(cfg *ipc.ChildConfig) error {
	if cfg.Identity == nil {
		return nil
	}
	return sandbox.DropTo(sandbox.Identity(*cfg.Identity))
}
