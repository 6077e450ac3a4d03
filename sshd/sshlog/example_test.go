package sshlog_test

import (
	"log/slog"
	"os"
	"time"

	"github.com/offload/offload/sshd/sshlog"
)

func Example() {
	h := sshlog.NewHandler(os.Stdout, &sshlog.Options{Format: sshlog.Syslog, PID: 812, Host: "gw",
		Now: func() time.Time { return time.Date(2026, 12, 3, 9, 5, 7, 0, time.UTC) }})
	log := slog.New(h)
	log.Info("Failed password for invalid user admin from 192.0.2.7 port 50022 ssh2", sshlog.Worded(), "user", "admin")
	log.Info("listening", "addr", "0.0.0.0:22")
	// Output:
	// Dec  3 09:05:07 gw sshd[812]: Failed password for invalid user admin from 192.0.2.7 port 50022 ssh2
	// Dec  3 09:05:07 gw sshd[812]: listening addr=0.0.0.0:22
}
