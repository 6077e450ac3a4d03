package sshd

import (
	"testing"

	"github.com/offload/offload/sshd/connection"
)

func TestWindowPerClient(t *testing.T) {
	auto := &connection.Config{}
	for _, tc := range []struct {
		version string
		want    uint32
	}{
		{"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u10", OpenSSHWindowSize},
		{"SSH-2.0-OpenSSH_for_Windows_9.5", OpenSSHWindowSize},
		{"SSH-2.0-Go", DefaultWindowSize},
		{"SSH-2.0-libssh2_1.11.0", DefaultWindowSize},
		{"SSH-2.0-PuTTY_Release_0.81", DefaultWindowSize},
		{"SSH-2.0-OpenSSHish", DefaultWindowSize},
	} {
		got := withWindow(auto, tc.version)
		if got.WindowSize != tc.want {
			t.Errorf("%s: window %d, want %d", tc.version, got.WindowSize, tc.want)
		}
	}
	if auto.WindowSize != 0 {
		t.Error("withWindow modified the shared configuration")
	}
	set := &connection.Config{WindowSize: 64 << 20}
	if got := withWindow(set, "SSH-2.0-OpenSSH_9.2"); got != set {
		t.Errorf("a configured window must apply to every client; got %d", got.WindowSize)
	}
	if DefaultWindowSize < 8<<20 {
		t.Errorf("default window %d is below 8 MiB", DefaultWindowSize)
	}
}
