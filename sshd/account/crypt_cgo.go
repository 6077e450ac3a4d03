//go:build cgo && !nocrypt

package account

/*
#cgo LDFLAGS: -lcrypt
#include <crypt.h>
#include <stdlib.h>
#include <string.h>

static int offload_crypt(const char *phrase, const char *setting, char *out, int outlen) {
	struct crypt_data *d = calloc(1, sizeof(struct crypt_data));
	if (d == NULL) return -1;
	char *r = crypt_r(phrase, setting, d);
	int n = -1;
	if (r != NULL && r[0] != '*' && (int)strlen(r) < outlen) {
		n = (int)strlen(r);
		memcpy(out, r, n);
	}
	explicit_bzero(d, sizeof(struct crypt_data));
	free(d);
	return n;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// cryptAvailable reports whether this build hashes passwords.
const cryptAvailable = true

var errCryptFailed = errors.New("account: crypt refused the hash setting (unsupported or malformed)")

// ErrNoCrypt: this build cannot hash passwords (not returned by this build).
var ErrNoCrypt = errors.New("account: password hashes need libcrypt")

// cryptHash hashes phrase with the method and salt of setting, with
// libcrypt (libxcrypt on Debian: yescrypt $y$, SHA-512 $6$, SHA-256 $5$,
// bcrypt $2b$ and the rest it supports).
func cryptHash(phrase, setting string) (string, error) {
	cp := C.CString(phrase)
	defer func() {
		C.explicit_bzero(unsafe.Pointer(cp), C.size_t(len(phrase)))
		C.free(unsafe.Pointer(cp))
	}()
	cs := C.CString(setting)
	defer C.free(unsafe.Pointer(cs))
	var out [C.CRYPT_OUTPUT_SIZE]C.char
	n := C.offload_crypt(cp, cs, &out[0], C.int(len(out)))
	if n < 0 {
		return "", errCryptFailed
	}
	return C.GoStringN(&out[0], n), nil
}
