#!/usr/bin/env bash
# Runs offload's whole test suite: static checks, unit and integration tests
# (SoftHSM, OpenSSH, p11-kit, ssh-audit), the race detector on concurrent
# code and a short fuzzing pass. Installs missing tools with apt-get when run
# as root; otherwise says what is missing (tests needing it then skip, or
# fail when OFFLOAD_REQUIRE_TOOLS=1, which CI sets).
#
#   ./scripts/test.sh            everything
#   FUZZTIME=30s ./scripts/test.sh   longer fuzzing per target (default 10s, 0 to skip)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${CI:-}" = "true" ]; then export OFFLOAD_REQUIRE_TOOLS=1; fi
FUZZTIME=${FUZZTIME:-10s}

# tool -> Debian package
missing=()
have() { command -v "$1" >/dev/null 2>&1 || [ -e "$1" ]; }
check() { have "$1" || missing+=("$2"); }
check softhsm2-util softhsm2
check pkcs11-tool opensc
check p11-kit p11-kit
check /usr/lib/x86_64-linux-gnu/pkcs11/p11-kit-client.so p11-kit-modules
# tpm2-pkcs11 on a software TPM (swtpm behind tpm2-abrmd on a private bus): test/pkcs11
check swtpm swtpm
check swtpm_setup swtpm-tools
check tpm2_startup tpm2-tools
check /usr/sbin/tpm2-abrmd tpm2-abrmd
check /usr/lib/x86_64-linux-gnu/libtss2-tcti-tabrmd.so.0 libtss2-tcti-tabrmd0
check dbus-daemon dbus-daemon
check /usr/lib/x86_64-linux-gnu/pkcs11/libtpm2_pkcs11.so libtpm2-pkcs11-1
check tpm2_ptool libtpm2-pkcs11-tools
check ssh openssh-client
check ss iproute2
check /usr/sbin/sshd openssh-server
check /usr/lib/openssh/sftp-server openssh-sftp-server
# OpenSSH's regression suite, run against both servers (test/regress/run.sh)
check /usr/lib/openssh/regress/test-exec.sh openssh-tests
check unshare util-linux
check sudo sudo
# config: docs/offload-sshd.{service,socket} checked with systemd-analyze verify
check systemd-analyze systemd
check ssh-audit ssh-audit
# the quick start in a pristine Debian 12 root (test/pristine); the Debian
# package (packaging/build-deb.sh) and its lintian check
check debootstrap debootstrap
check dpkg-buildpackage dpkg-dev
check dh debhelper
check lintian lintian
# auth: PAM (cgo binding, pam_oath second factor), libcrypt, password clients, fail2ban
check /usr/include/security/pam_appl.h libpam0g-dev
check /usr/include/crypt.h libcrypt-dev
check oathtool oathtool
ls /usr/lib/*/security/pam_oath.so >/dev/null 2>&1 || missing+=(libpam-oath)
check sshpass sshpass
check fail2ban-regex fail2ban
/usr/bin/python3 -c 'import paramiko' 2>/dev/null || missing+=(python3-paramiko)
# the interop suite's clients (test/interop)
check plink putty-tools
check puttygen putty-tools
check curl curl
check rclone rclone
check lftp lftp
check git git
check rsync rsync
check node nodejs
check npm npm
/usr/bin/python3 -c 'import paramiko' >/dev/null 2>&1 || missing+=(python3-paramiko)
/usr/bin/python3 -c 'import asyncssh' >/dev/null 2>&1 || missing+=(python3-asyncssh)
# connection: X11 forwarding (test/connection); curl (above) is also its SOCKS client
check Xvfb xvfb
check xauth xauth
check xdpyinfo x11-utils
if [ "$(uname -m)" != x86_64 ]; then
	# the multiarch path above is amd64's; look anywhere for the others
	missing=("${missing[@]/p11-kit-modules/}")
	ls /usr/lib/*/pkcs11/p11-kit-client.so >/dev/null 2>&1 || missing+=(p11-kit-modules)
fi
pkgs=$(printf '%s\n' "${missing[@]}" | sed '/^$/d' | sort -u | tr '\n' ' ')
if [ -n "$pkgs" ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "== installing: $pkgs"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		# shellcheck disable=SC2086
		apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
	else
		echo "== missing tools: $pkgs"
		echo "   install them with: sudo apt-get install $pkgs"
		echo "   (tests that need them will skip$([ "${OFFLOAD_REQUIRE_TOOLS:-}" = 1 ] && echo ', and OFFLOAD_REQUIRE_TOOLS=1 makes that a failure'))"
	fi
fi

step() { echo; echo "== $*"; }

# node's ssh2 for test/interop, from npm into a cache directory (never the
# repository); the test looks there too.
export OFFLOAD_NPM_DIR=${OFFLOAD_NPM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/offload/npm}
if command -v npm >/dev/null && [ ! -f "$OFFLOAD_NPM_DIR/node_modules/ssh2/package.json" ]; then
	echo "== installing npm ssh2 into $OFFLOAD_NPM_DIR"
	mkdir -p "$OFFLOAD_NPM_DIR"
	npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$OFFLOAD_NPM_DIR" ssh2@1 >/dev/null ||
		echo "   npm install ssh2 failed: the node-ssh2 part of test/interop will skip (or fail under OFFLOAD_REQUIRE_TOOLS=1)"
fi

step "gofmt"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then echo "gofmt would change:"; echo "$bad"; exit 1; fi

step "go vet ./..."
go vet ./...

step "CGO_ENABLED=0 go build ./..."
CGO_ENABLED=0 go build ./...

step "go test ./..."
go test -count=1 -timeout 20m ./...

step "quick start: ./scripts/run.sh --smoke (host key in a fresh SoftHSM token, ssh and sftp log in)"
if command -v softhsm2-util >/dev/null && command -v ssh >/dev/null; then
	smoke_state=$(mktemp -d "${HOME:-/tmp}/.offload-smoke.XXXXXX")
	trap 'rm -rf "$smoke_state"' EXIT
	OFFLOAD_STATE="$smoke_state" ./scripts/run.sh --smoke
elif [ "${OFFLOAD_REQUIRE_TOOLS:-}" = 1 ]; then
	echo "softhsm2-util or ssh missing and OFFLOAD_REQUIRE_TOOLS=1"; exit 1
else
	echo "skipped: softhsm2-util or ssh missing"
fi

step "Debian package: packaging/build-deb.sh (dpkg-buildpackage, lintian)"
deb_dir=$(mktemp -d)
trap 'rm -rf "$deb_dir" "${smoke_state:-}"' EXIT
deb=
if [ "$(id -u)" = 0 ] || { command -v dh && command -v lintian && command -v dpkg-buildpackage; } >/dev/null; then
	deb=$(packaging/build-deb.sh "$deb_dir")
elif [ "${OFFLOAD_REQUIRE_TOOLS:-}" = 1 ]; then
	echo "debhelper, dpkg-dev or lintian missing and OFFLOAD_REQUIRE_TOOLS=1"; exit 1
else
	echo "skipped: debhelper, dpkg-dev or lintian missing"
fi

step "pristine Debian 12 (test/pristine/run.sh): the quick start (run.sh --smoke in a debootstrap minbase root with gcc and Go), then the package: dpkg -i, ExecStart, ssh login, remove, purge"
if [ "$(id -u)" = 0 ]; then
	test/pristine/run.sh ${deb:+--package "$deb"}
elif [ "${OFFLOAD_REQUIRE_TOOLS:-}" = 1 ]; then
	echo "not root and OFFLOAD_REQUIRE_TOOLS=1: debootstrap and chroot need root"; exit 1
else
	echo "skipped: not root (debootstrap and chroot need root)"
fi

step "OpenSSH's regression suite against /usr/sbin/sshd and offload sshd (test/regress/run.sh)"
if [ "$(id -u)" = 0 ] && [ -f /usr/lib/openssh/regress/test-exec.sh ] && [ -x /usr/sbin/sshd ]; then
	test/regress/run.sh
elif [ "${OFFLOAD_REQUIRE_TOOLS:-}" = 1 ]; then
	echo "test/regress/run.sh needs root, openssh-tests and openssh-server, and OFFLOAD_REQUIRE_TOOLS=1"; exit 1
else
	echo "skipped: needs root (it creates a throwaway user), openssh-tests and openssh-server"
fi

step "race detector on the concurrent code"
race_pkgs=$(go list ./provider/... ./providers/... ./sshd/... 2>/dev/null)
# shellcheck disable=SC2086
go test -count=1 -race -short -timeout 15m $race_pkgs

# fuzz_one fuzzes one target. A run that writes a crashing input fails.
# Go 1.26's fuzz coordinator can also fail a clean run with a bare
# "context deadline exceeded" at the -fuzztime boundary (golang/go#75804,
# fixed in Go 1.27): with no new input written, that is reported and passed.
fuzz_one() {
	local pkg=$1 dir=$2 f=$3 corpus before after out rc=0
	corpus="$dir/testdata/fuzz/$f"
	before=$(ls "$corpus" 2>/dev/null | sort || true)
	out=$(go test -run='^$' -fuzz="^$f\$" -fuzztime="$FUZZTIME" "$pkg" 2>&1) || rc=$?
	echo "$out" | tail -n 4
	[ $rc -eq 0 ] && return 0
	after=$(ls "$corpus" 2>/dev/null | sort || true)
	if [ "$before" = "$after" ] && echo "$out" | grep -q 'context deadline exceeded'; then
		echo "   (no crashing input written: the Go fuzz deadline race, golang/go#75804; not a failure)"
		return 0
	fi
	echo "$out"
	echo "FAIL: $f found a crashing input; it is kept in $corpus"
	return 1
}

if [ "$FUZZTIME" != 0 ]; then
	step "fuzzing each target for $FUZZTIME"
	for pkg in $(go list ./...); do
		dir=$(go list -f '{{.Dir}}' "$pkg")
		for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
			echo "-- $pkg $f"
			fuzz_one "$pkg" "$dir" "$f"
		done
	done
fi

step "all tests passed"
