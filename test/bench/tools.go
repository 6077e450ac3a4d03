package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// tools are the executables the harness runs.
type tools struct {
	SSHD, SSH, SFTP, SCP, Keygen string
	SoftHSMUtil, SoftHSMModule   string // empty when PKCS #11 is skipped
}

// toolHint says where the OpenSSH and SoftHSM tools come from.
const toolHint = "on Debian: apt-get install openssh-server openssh-client softhsm2"

// sshdPaths are where sshd lives when it is not on PATH (it usually is
// in sbin, which unprivileged PATHs lack).
var sshdPaths = []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"}

// softhsmModules are the usual places of libsofthsm2.so.
var softhsmModules = []string{
	"/usr/lib/softhsm/libsofthsm2.so",
	"/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
	"/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
	"/usr/lib64/pkcs11/libsofthsm2.so",
	"/usr/local/lib/softhsm/libsofthsm2.so",
}

// lookTool finds name on PATH or at one of the extra paths.
func lookTool(look func(string) (string, error), name string, extra ...string) (string, bool) {
	if p, err := look(name); err == nil {
		return p, true
	}
	for _, p := range extra {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, true
		}
	}
	return "", false
}

// findTools looks every tool up and names all the missing ones at once.
func findTools(pkcs11 bool) (*tools, error) {
	return findToolsWith(exec.LookPath, pkcs11)
}

func findToolsWith(look func(string) (string, error), pkcs11 bool) (*tools, error) {
	t := &tools{}
	var missing []string
	need := func(dst *string, name string, extra ...string) {
		p, ok := lookTool(look, name, extra...)
		if !ok {
			missing = append(missing, name)
		}
		*dst = p
	}
	need(&t.SSHD, "sshd", sshdPaths...)
	need(&t.SSH, "ssh")
	need(&t.SFTP, "sftp")
	need(&t.SCP, "scp")
	need(&t.Keygen, "ssh-keygen")
	if pkcs11 {
		need(&t.SoftHSMUtil, "softhsm2-util")
		need(&t.SoftHSMModule, "libsofthsm2.so", softhsmModules...)
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("bench: missing tools: %s (%s)", strings.Join(missing, ", "), toolHint)
		if pkcs11 {
			msg += "; -pkcs11=false runs without the SoftHSM server"
		}
		return t, errors.New(msg)
	}
	return t, nil
}
