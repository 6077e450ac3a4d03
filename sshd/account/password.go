package account

import (
	"context"
	"crypto/hmac"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"strings"
	"time"
)

// MaxPasswordLen is the longest password checked, as OpenSSH's
// MAX_PASSWORD_LEN; longer ones fail.
const MaxPasswordLen = 1024

// dummySetting is hashed for invalid users, so that they cost what real
// ones do (yescrypt, Debian 12's default, with its default cost).
const dummySetting = "$y$j9T$F5Jx5fExrKuPp53xLKQ..1$"

// VerifyPassword reports whether password is a's password, as OpenSSH's
// password check without PAM: an empty password only with permitEmpty
// (PermitEmptyPasswords), and then only for an account whose stored hash
// is empty; a password longer than MaxPasswordLen or holding a NUL byte
// (which crypt would cut short) fails. A nil a (an invalid user) costs a
// hash and fails. Locked accounts (a "!" before the hash) fail because
// the hash cannot match. The error is ErrNoCrypt in a build without
// libcrypt, or a failure of crypt itself; a wrong password is (false, nil).
func VerifyPassword(a *Account, password string, permitEmpty bool) (bool, error) {
	if len(password) > MaxPasswordLen || strings.IndexByte(password, 0) >= 0 {
		return false, nil
	}
	if password == "" && !permitEmpty {
		return false, nil
	}
	if a == nil {
		_, err := cryptHash(password, dummySetting)
		return false, noCrypt(err)
	}
	stored := a.Hash()
	if stored == "" {
		return password == "", nil
	}
	got, err := cryptHash(password, stored)
	if err != nil {
		return false, noCrypt(err)
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(stored)) == 1, nil
}

// noCrypt keeps only ErrNoCrypt: crypt refusing a setting (a lock
// marker, "*", an unknown method) just means no password matches.
func noCrypt(err error) error {
	if errors.Is(err, ErrNoCrypt) {
		return err
	}
	return nil
}

// HashPassword hashes password with setting (a method prefix and salt
// such as "$6$saltsalt$"); tests and tools use it.
func HashPassword(password, setting string) (string, error) { return cryptHash(password, setting) }

// minFailDelay is OpenSSH's MIN_FAIL_DELAY_SECONDS.
const minFailDelay = 5 * time.Millisecond

// FailDelay is the minimum duration of a failed authentication attempt
// for user, as OpenSSH's user_specific_delay: 5 ms plus up to about
// 4.3 ms derived from secret and the name, so that the time a failure
// takes tells nothing about whether the user exists. secret should be
// random per server start (OpenSSH's timing secret).
func FailDelay(secret []byte, user string) time.Duration {
	m := hmac.New(sha512.New, secret)
	m.Write([]byte(user))
	v := binary.BigEndian.Uint32(m.Sum(nil))
	return minFailDelay + time.Duration(v)*time.Nanosecond/1000
}

// WaitMinimum sleeps until d has passed since start; when it has passed
// already, d is doubled until it has not (as OpenSSH's
// ensure_minimum_time_since), so slow failures do not stand out either.
// It returns early with ctx's error.
func WaitMinimum(ctx context.Context, start time.Time, d time.Duration) error {
	elapsed := time.Since(start)
	for d > 0 && d <= elapsed {
		d *= 2
	}
	t := time.NewTimer(d - elapsed)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
