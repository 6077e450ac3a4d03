// Package secret clears secrets (passwords, keyboard-interactive answers)
// from memory once they have been used: Go's collector frees memory
// without clearing it, so a password left in a freed buffer can be read
// from the process's memory long after the login (OpenSSH clears it with
// explicit_bzero).
package secret

import "unsafe"

// Wipe zeroes b.
func Wipe(b []byte) { clear(b) }

// WipeString zeroes the bytes of s, which must have been made at run
// time from bytes (string(b), as a parser makes it) and not be used
// again by anyone: Go's strings are otherwise immutable. Strings shorter
// than two bytes are left alone (the runtime shares the one-byte ones,
// and they hold nothing worth clearing).
func WipeString(s string) {
	if len(s) < 2 {
		return
	}
	clear(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// WipeStrings is WipeString for each of ss.
func WipeStrings(ss []string) {
	for _, s := range ss {
		WipeString(s)
	}
}
