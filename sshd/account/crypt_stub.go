//go:build !cgo || nocrypt

package account

import "errors"

const cryptAvailable = false

var errCryptFailed = errors.New("account: crypt refused the hash setting")

// ErrNoCrypt: this build cannot hash passwords.
var ErrNoCrypt = errors.New("account: password hashes need libcrypt: build with cgo (CGO_ENABLED=1, libcrypt-dev installed) and without the nocrypt tag, or use PAM")

func cryptHash(phrase, setting string) (string, error) { return "", ErrNoCrypt }
