package connection_test

import (
	"testing"

	"github.com/offload/offload/sshd/connection"
)

// TestStreamLocalPermitLikeOpenSSH: a direct-streamlocal open (ssh -L
// to a Unix socket on the server) is allowed or refused as OpenSSH's sshd
// allows or refuses it on the same configuration and authorized_keys
// options: PermitOpen, permitopen=, restrict,port-forwarding,
// AllowTcpForwarding and AllowStreamLocalForwarding. A host:port entry
// for a TCP target must not reach a socket.
func TestStreamLocalPermitLikeOpenSSH(t *testing.T) {
	sock := unixEcho(t)
	cases := []struct {
		name    string
		keyword string // sshd_config line for both servers ("" for none)
		cfg     connection.Config
		keyOpts string
	}{
		{name: "defaults"},
		{name: "PermitOpen none", keyword: "PermitOpen none", cfg: connection.Config{PermitOpen: []string{"none"}}},
		{name: "PermitOpen host:port", keyword: "PermitOpen localhost:80", cfg: connection.Config{PermitOpen: []string{"localhost:80"}}},
		{name: "PermitOpen host:*", keyword: "PermitOpen localhost:*", cfg: connection.Config{PermitOpen: []string{"localhost:*"}}},
		{name: "PermitOpen *:*", keyword: "PermitOpen *:*", cfg: connection.Config{PermitOpen: []string{"*:*"}}},
		{name: "PermitOpen *:22", keyword: "PermitOpen *:22", cfg: connection.Config{PermitOpen: []string{"*:22"}}},
		{name: "PermitOpen [path]:*", keyword: "PermitOpen [" + sock + "]:*", cfg: connection.Config{PermitOpen: []string{"[" + sock + "]:*"}}},
		{name: "PermitOpen any", keyword: "PermitOpen any", cfg: connection.Config{PermitOpen: []string{"any"}}},
		{name: "AllowTcpForwarding no", keyword: "AllowTcpForwarding no", cfg: connection.Config{AllowTCPForwarding: connection.ForwardNone}},
		{name: "AllowTcpForwarding remote", keyword: "AllowTcpForwarding remote", cfg: connection.Config{AllowTCPForwarding: connection.ForwardRemote}},
		{name: "AllowStreamLocalForwarding local", keyword: "AllowStreamLocalForwarding local", cfg: connection.Config{AllowStreamLocalForwarding: connection.ForwardLocal}},
		{name: "AllowStreamLocalForwarding remote", keyword: "AllowStreamLocalForwarding remote", cfg: connection.Config{AllowStreamLocalForwarding: connection.ForwardRemote}},
		{name: "DisableForwarding", keyword: "DisableForwarding yes", cfg: connection.Config{DisableForwarding: true}},
		{name: "permitopen= host:port", keyOpts: `permitopen="localhost:80"`},
		{name: "permitopen= *:*", keyOpts: `permitopen="*:*"`},
		{name: "permitopen= path", keyOpts: `permitopen="[` + sock + `]:*"`},
		{name: "restrict", keyOpts: "restrict"},
		{name: "restrict,port-forwarding", keyOpts: "restrict,port-forwarding"},
		{name: "restrict,port-forwarding,permitopen=", keyOpts: `restrict,port-forwarding,permitopen="localhost:80"`},
		{name: "no-port-forwarding", keyOpts: "no-port-forwarding"},
		{name: "PermitOpen any, permitopen= host:port", keyword: "PermitOpen any", cfg: connection.Config{PermitOpen: []string{"any"}}, keyOpts: `permitopen="localhost:80"`},
		{name: "PermitOpen *:*, permitopen= host:port", keyword: "PermitOpen *:*", cfg: connection.Config{PermitOpen: []string{"*:*"}}, keyOpts: `permitopen="localhost:80"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			f := newFixture(t, &cfg)
			f.setKeyOptions(t, tc.keyOpts)
			var extra []string
			if tc.keyword != "" {
				extra = append(extra, tc.keyword)
			}
			ref := f.reference(t, extra...)
			got, want := f.streamLocalOpens(t, sock), ref.streamLocalOpens(t, sock)
			if got != want {
				t.Errorf("offload: %s; OpenSSH: %s", got, want)
			}
		})
	}
}

// streamLocalOpens opens a direct-streamlocal channel to the echo socket
// at path and says whether it carried data ("forwarded") or how it was
// refused.
func (f *fixture) streamLocalOpens(t *testing.T, path string) string {
	t.Helper()
	c := f.dial(t)
	defer c.Close()
	conn, err := c.Dial("unix", path)
	if err != nil {
		return "refused: " + err.Error()
	}
	defer conn.Close()
	roundTrip(t, conn, "through "+f.port)
	return "forwarded"
}
