//go:build offloadcrashhook

package preauth

// CrashUser is the user name that crashes a worker built with the
// offloadcrashhook tag, for tests of crash attribution only: a client
// that sends it in a userauth request crashes the worker beyond recovery
// while the worker is working on that client's input.
const CrashUser = "offload-crash-hook"

func crashHook(user string) {
	if user != CrashUser {
		return
	}
	go func() { panic("pre-auth worker: test crash hook") }() // not recoverable: another goroutine
	select {}
}
