//go:build !cgo || nopam

package pam

import (
	"errors"
	"strings"
	"testing"
)

func TestStubExplains(t *testing.T) {
	_, err := Start(Config{}, "root", Items{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "cgo") {
		t.Fatalf("Start in a build without PAM = %v, want ErrUnavailable naming cgo", err)
	}
}
