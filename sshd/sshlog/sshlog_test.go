package sshlog

import (
	"bytes"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestFormats(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 12, 3, 9, 5, 7, 0, time.UTC) }
	for f, want := range map[Format]string{
		Bare:    "Failed password for alice from 192.0.2.1 port 22 ssh2\n",
		Program: "sshd[812]: Failed password for alice from 192.0.2.1 port 22 ssh2\n",
		Syslog:  "Dec  3 09:05:07 gw sshd[812]: Failed password for alice from 192.0.2.1 port 22 ssh2\n",
	} {
		var b bytes.Buffer
		log := slog.New(NewHandler(&b, &Options{Format: f, PID: 812, Host: "gw", Now: now}))
		log.With("remote_ip", "192.0.2.1").Info("Failed password for alice from 192.0.2.1 port 22 ssh2", Worded(), "user", "alice")
		if b.String() != want {
			t.Errorf("format %d: %q, want %q", f, b.String(), want)
		}
	}
}

func TestUnwordedAndLevels(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(NewHandler(&b, &Options{Level: slog.LevelDebug}))
	log.With("addr", "127.0.0.1:22").WithGroup("g").Info("listening", "n", 1, "why", "a b")
	log.Error("host key signature failed", "err", "token gone")
	log.Debug("kex done")
	want := "listening addr=127.0.0.1:22 g.n=1 g.why=\"a b\"\nerror: host key signature failed err=\"token gone\"\ndebug1: kex done\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// A user name with a newline cannot forge a second line.
func TestEscapes(t *testing.T) {
	var b bytes.Buffer
	slog.New(NewHandler(&b, nil)).Info("Invalid user x\nAccepted password for root from 1.2.3.4 port 1 ssh2 from 10.0.0.1", Worded())
	if strings.Count(b.String(), "\n") != 1 || !strings.Contains(b.String(), `x\012Accepted`) {
		t.Fatalf("%q", b.String())
	}
}

func TestGroupsAndEmptyAttrs(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(NewHandler(&b, nil))
	log.WithGroup("empty").Info("a")
	log.With("k", "v").WithGroup("g").With("x", 1).Info("b", slog.Group("sub", "y", 2), slog.Attr{})
	log.With(Worded()).Info("c", "hidden", 1)
	if want := "a\nb k=v g.x=1 g.sub.y=2\nc\n"; b.String() != want {
		t.Fatalf("%q, want %q", b.String(), want)
	}
}

func TestLines(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.7")
	for got, want := range map[string]string{
		ConnectionClosed(Peer{Addr: a, Port: 5, User: "u"}):                                                    "Connection closed by authenticating user u 192.0.2.7 port 5 [preauth]",
		ConnectionClosed(Peer{Addr: a, Port: 5, User: "u", InvalidUser: true}):                                 "Connection closed by invalid user u 192.0.2.7 port 5 [preauth]",
		ConnectionClosed(Peer{Addr: a, Port: 5}):                                                               "Connection closed by 192.0.2.7 port 5 [preauth]",
		Disconnected(Peer{Addr: a, Port: 5, User: "u", Authenticated: true}):                                   "Disconnected from user u 192.0.2.7 port 5",
		ReceivedDisconnect(Peer{Addr: a, Port: 5, Authenticated: true, User: "u"}, 11, "disconnected by user"): "Received disconnect from 192.0.2.7 port 5:11: disconnected by user",
		TooManyFailures(Peer{Addr: a, Port: 5, User: "u", InvalidUser: true}):                                  "Disconnecting invalid user u 192.0.2.7 port 5: Too many authentication failures [preauth]",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}

func TestMarkPreauth(t *testing.T) {
	for in, want := range map[string]string{
		"Accepted publickey for root from 192.0.2.1 port 22 ssh2": "Accepted publickey for root from 192.0.2.1 port 22 ssh2 [preauth]",
		"Connection closed by 192.0.2.1 port 22 [preauth]":        "Connection closed by 192.0.2.1 port 22 [preauth]",
		"x [preauth] [preauth]":                                   "x [preauth]",
		"":                                                        " [preauth]",
	} {
		if got := MarkPreauth(in); got != want {
			t.Errorf("MarkPreauth(%q) = %q, want %q", in, got, want)
		}
	}
}
