package auth_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/wire"
)

// serve is what the server glue does after the first key exchange on a
// connection: authenticate the user, then hand the permissions to the
// connection layer.
func serve(conn net.Conn, pc wire.PacketConn, cfg *auth.Config) {
	conn.SetDeadline(time.Now().Add(2 * time.Minute)) // LoginGraceTime
	perms, err := auth.Run(context.Background(), pc, cfg, conn.RemoteAddr())
	if err != nil {
		// Run has sent SSH_MSG_DISCONNECT if one was due.
		pc.Close()
		return
	}
	conn.SetDeadline(time.Time{})
	fmt.Println("logged in:", perms.User, perms.Method)
}

func Example() {
	cfg := &auth.Config{
		AuthorizedKeysFiles: []string{".ssh/authorized_keys", "/etc/ssh/authorized_keys/%u"},
		TrustedUserCAKeys:   "/etc/ssh/user_ca.pub",
		PermitRootLogin:     auth.RootNo,
		AllowUsers:          []string{"deploy@10.0.0.0/8", "alice"},
		Banner:              "Authorized use only.\n",
		Logger:              slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
	if os.Getuid() != 0 {
		cfg.OnlyUser = os.Getenv("USER") // only the running user can log in
	}
	if err := cfg.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	_ = serve // called per connection by the server
	cfg.AuthenticationMethods = [][]string{{"publickey", "hostbased"}}
	fmt.Println(cfg.Validate())
	// Output: auth: config AuthenticationMethods: unknown method "hostbased"
}
