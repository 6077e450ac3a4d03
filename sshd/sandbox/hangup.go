package sandbox

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

var hangupOnce sync.Once

// HangupDefault makes the programs this process starts from now on get
// SIGHUP's default action (they end on a hangup) even when this process
// was started with SIGHUP ignored, as under nohup or a supervisor that
// ignores it: OpenSSH's sshd resets SIGHUP for its sessions likewise.
// Go passes an ignored SIGHUP on to the programs it starts unless the
// process handles the signal, so HangupDefault handles it, dropping the
// deliveries to this process as the ignore did. It changes nothing when
// SIGHUP is not ignored. Safe to call many times.
func HangupDefault() { hangupOnce.Do(hangupDefault) }

func hangupDefault() {
	if signal.Ignored(syscall.SIGHUP) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	}
}
