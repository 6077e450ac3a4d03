package postauth

import (
	"encoding/base64"
	"io/fs"
	"reflect"
	"testing"

	"github.com/offload/offload/sshd/ipc"
)

// TestFromKeeper: what a keeper passes in pamVar is what the post-auth
// process gives its sessions; nothing, or something malformed, is none.
func TestFromKeeper(t *testing.T) {
	enc := func(o *ipc.PAMSessionOpened) string { return base64.StdEncoding.EncodeToString(o.Marshal()) }
	t.Setenv(pamVar, enc(&ipc.PAMSessionOpened{Env: []string{"A=1", "LANG=C"}, Umask: 0o027, Messages: "motd\n"}))
	env, umask, msgs := fromKeeper()
	if !reflect.DeepEqual(env, []string{"A=1", "LANG=C"}) || umask == nil || *umask != fs.FileMode(0o027) || msgs != "motd\n" {
		t.Fatalf("got %q, %v, %q", env, umask, msgs)
	}
	if cap(env) != len(env) {
		t.Fatal("the environment is not clipped: connections would append into one array")
	}
	t.Setenv(pamVar, enc(&ipc.PAMSessionOpened{Umask: -1}))
	if env, umask, msgs := fromKeeper(); env != nil || umask != nil || msgs != "" {
		t.Fatalf("an empty session gave %q, %v, %q", env, umask, msgs)
	}
	for _, bad := range []string{"", "not base64!", base64.StdEncoding.EncodeToString([]byte{0, 0, 0, 9})} {
		t.Setenv(pamVar, bad)
		if env, umask, msgs := fromKeeper(); env != nil || umask != nil || msgs != "" {
			t.Fatalf("%q gave %q, %v, %q", bad, env, umask, msgs)
		}
	}
}
