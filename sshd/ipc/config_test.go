package ipc

import (
	"log/slog"
	"testing"
	"time"
)

func marshalConfig(c *ChildConfig) []byte {
	b, err := c.Marshal()
	if err != nil {
		panic(err)
	}
	return b
}

func TestChildConfigRoundTrip(t *testing.T) {
	roundTrip(t, "worker", &ChildConfig{Plan: []byte{1, 2, 3}, LogLevel: slog.LevelDebug, LoginGraceTime: time.Minute,
		MaxRequests: 60, Metrics: true, Identity: &Identity{Uid: 100, Gid: 65534, Groups: []uint32{}}},
		marshalConfig, ParseChildConfig)
	roundTrip(t, "post-auth", &ChildConfig{Plan: []byte{9}, LogLevel: slog.LevelWarn, User: "alice", LoginRecords: true,
		Identity: &Identity{Uid: 1000, Gid: 1000, Groups: []uint32{4, 27}}, Chroot: "/srv/jail"},
		marshalConfig, ParseChildConfig)
	roundTrip(t, "keeper", &ChildConfig{User: "bob", PAM: &PAMSession{Service: "sshd", ConfDir: "/etc/pam.d",
		RemoteHost: "192.0.2.1", Spawn: true}}, marshalConfig, ParseChildConfig)
}

func TestChildConfigTooLarge(t *testing.T) {
	if _, err := (&ChildConfig{Plan: make([]byte, MaxMessage)}).Marshal(); err != ErrTooLarge {
		t.Fatalf("a plan of MaxMessage bytes: %v, want ErrTooLarge", err)
	}
}

func FuzzChildConfig(f *testing.F) {
	fuzzParse(f, &ChildConfig{Plan: []byte{1}, User: "u", Identity: &Identity{Groups: []uint32{1}},
		PAM: &PAMSession{Service: "sshd"}}, marshalConfig, ParseChildConfig)
}

func marshalSpawn(s *Spawn) []byte {
	b, err := s.Marshal()
	if err != nil {
		panic(err)
	}
	return b
}

func TestSpawnRoundTrip(t *testing.T) {
	roundTrip(t, "Spawn", &Spawn{Path: "/bin/sh", Dir: "/home/alice", Chroot: "/srv", Args: []string{"sh", "-c", "echo hi"},
		Env: []string{"HOME=/home/alice", "TERM=xterm"}, UID: 1000, GID: 1000, Groups: []uint32{27}, Setsid: true,
		Setctty: true, Ctty: 3, Umask: 0o22}, marshalSpawn, ParseSpawn)
}

func FuzzSpawn(f *testing.F) {
	fuzzParse(f, &Spawn{Path: "/bin/sh", Args: []string{"sh"}, Env: []string{"A=b"}, Groups: []uint32{1}}, marshalSpawn, ParseSpawn)
}
