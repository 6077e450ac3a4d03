package sshd

import (
	"context"
	"errors"

	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/transport"
	"github.com/offload/offload/sshd/wire"
)

// serveConnection runs the connection protocol for an authenticated user.
// Until sshd/connection is committed, it refuses with a disconnect.
func serveConnection(ctx context.Context, tc *transport.Conn, p *perm.Permissions, c *conn) error {
	_ = ctx
	_ = p
	tc.Disconnect(wire.DisconnectServiceNotAvailable, "connection layer not available")
	return errors.New("sshd: connection layer not available")
}
