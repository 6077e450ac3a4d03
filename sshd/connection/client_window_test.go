package connection

import "testing"

func TestWindowPerClient(t *testing.T) {
	auto := &Config{}
	for _, tc := range []struct {
		version string
		want    uint32
		pace    bool
	}{
		{"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u10", OpenSSHWindowSize, true},
		{"SSH-2.0-OpenSSH_for_Windows_9.5", OpenSSHWindowSize, true},
		{"SSH-2.0-Go", WideWindowSize, false},
		{"SSH-2.0-libssh2_1.11.0", WideWindowSize, false},
		{"SSH-2.0-PuTTY_Release_0.81", WideWindowSize, false},
		{"SSH-2.0-OpenSSHish", WideWindowSize, false},
	} {
		got := ForClient(auto, tc.version)
		if got.WindowSize != tc.want || got.PaceSends != tc.pace {
			t.Errorf("%s: window %d, pacing %v; want %d, %v", tc.version, got.WindowSize, got.PaceSends, tc.want, tc.pace)
		}
	}
	if auto.WindowSize != 0 || auto.PaceSends {
		t.Error("withWindow modified the shared configuration")
	}
	set := &Config{WindowSize: 64 << 20}
	if got := ForClient(set, "SSH-2.0-OpenSSH_9.2"); got.WindowSize != set.WindowSize || !got.PaceSends {
		t.Errorf("a configured window must apply to every client, with pacing for OpenSSH; got %d, %v", got.WindowSize, got.PaceSends)
	}
	if got := ForClient(set, "SSH-2.0-Go"); got != set {
		t.Error("a configured window must apply to every client as it is")
	}
	if WideWindowSize < 8<<20 {
		t.Errorf("default window %d is below 8 MiB", WideWindowSize)
	}
}
