package main

import (
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/sshd/sshlog"
)

// TestSyslogFacility: with SyslogFacility, records reach syslog with that
// facility and the severity of their level, in OpenSSH's words.
func TestSyslogFacility(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, err := newSyslogWriter("local3", "unixgram", path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	log := slog.New(sshlog.NewHandler(w, &sshlog.Options{Format: sshlog.Bare, Level: slog.LevelDebug}))
	log.Error("boom")
	log.Info("Accepted publickey for alice from 192.0.2.1 port 22 ssh2", sshlog.Worded())
	log.Debug("detail")
	// LOCAL3 is facility 19: priority 19*8 + severity (err 3, info 6, debug 7).
	for _, want := range []string{"<155>", "<158>", "<159>"} {
		buf := make([]byte, 1024)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Read(buf)
		if err != nil || !strings.HasPrefix(string(buf[:n]), want) {
			t.Errorf("syslog datagram %q %v, want it to start %s", buf[:n], err, want)
		}
	}
	if _, err := newSyslogWriter("KERN", "unixgram", path); err == nil {
		t.Error("facility KERN accepted")
	}
}

// UsePAM yes runs the session stack in both process models, so neither
// warns that it is left out.
func TestSshdNoPAMSessionWarning(t *testing.T) {
	for _, sep := range []string{"no", "yes"} {
		cfg := writeConfig(t, "UsePAM yes\nPrivilegeSeparation "+sep+"\n")
		_, stderr, err := runSshd("-t", "-f", cfg)
		if err != nil {
			t.Fatalf("PrivilegeSeparation %s: -t: %v", sep, err)
		}
		if strings.Contains(stderr, "session stack") {
			t.Errorf("PrivilegeSeparation %s: warns: %q", sep, stderr)
		}
	}
}
