#!/usr/bin/env bash
# The quick start on a pristine Debian 12: builds a minimal bookworm root
# (debootstrap --variant=minbase, plus gcc, libc6-dev, git and
# ca-certificates: what a developer who has "Go and the system C compiler"
# has), puts this machine's Go in it, clones this checkout's HEAD into it and
# runs `scripts/run.sh --smoke` there in a chroot. run.sh must install
# everything else it needs itself (PAM and libcrypt headers, SoftHSM, the
# OpenSSH client), as it would on a new machine.
#
#   test/pristine/run.sh                 the quick start
#   test/pristine/run.sh --package-only DEB   only the package part
#   test/pristine/run.sh --package DEB   also install DEB with dpkg -i in a
#                                        second pristine root, start the daemon
#                                        as its unit does, log in, remove and
#                                        purge it (test/pristine/package.sh)
#
# Needs root and debootstrap. Without them it skips (exit 0), or fails when
# OFFLOAD_REQUIRE_TOOLS=1.
#
# Cache: the finished root is kept as a directory under
# $OFFLOAD_PRISTINE_CACHE (default /var/cache/offload-ci/pristine), named by a
# hash of the mirror and the package list, and each run works on an overlay
# of it (a copy where overlayfs is missing), so a warm run spends its time
# on run.sh itself. A cold run builds the root first (debootstrap downloads
# from the mirror apt uses on this machine). run.sh's apt-get runs every
# time. Go modules come from this machine's module cache (bound in), or
# GOPROXY as configured here. The chroot's Go build cache is kept in
# $cache/gocache (OFFLOAD_PRISTINE_COLD=1: an empty one): Go's cache keys
# cover the sources, flags and the C compiler but not system headers, so a
# cached cgo package would build even without its headers; the test
# therefore also checks that run.sh installed the header packages
# (libpam0g-dev, libcrypt-dev) itself.
#
# Mounts (/proc, /dev, Go, the module cache) are made in a private mount
# namespace and undone at exit, also on failure; processes left in the
# root are killed first.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cache=${OFFLOAD_PRISTINE_CACHE:-/var/cache/offload-ci/pristine}
suite=bookworm
base_pkgs=gcc,libc6-dev,git,ca-certificates

say() { echo "== pristine: $*" >&2; }
skip() {
	if [ "${OFFLOAD_REQUIRE_TOOLS:-}" = 1 ]; then
		echo "pristine: $* and OFFLOAD_REQUIRE_TOOLS=1" >&2
		exit 1
	fi
	echo "pristine: skipped: $*" >&2
	exit 0
}

deb=
quickstart=true
case "${1:-}" in
--package) deb=$(cd "$(dirname "$2")" && pwd)/$(basename "$2") ;;
--package-only) deb=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); quickstart=false ;;
"") ;;
*) echo "usage: $0 [--package DEB | --package-only DEB]" >&2; exit 2 ;;
esac

[ "$(id -u)" = 0 ] || skip "not root"
command -v debootstrap >/dev/null || skip "debootstrap is missing (apt-get install debootstrap)"
[ -x /usr/local/go/bin/go ] || skip "no Go in /usr/local/go"

# A private mount namespace: mounts made here never leak into the host's,
# and vanish with the last process in it.
if [ -z "${OFFLOAD_PRISTINE_NS:-}" ] && command -v unshare >/dev/null; then
	exec env OFFLOAD_PRISTINE_NS=1 unshare --mount --propagation private "$0" "$@"
fi

# mirror: the Debian archive apt uses here (deb822 .sources or one-line
# .list), else deb.debian.org.
mirror() {
	local m
	m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v s="$suite" '
		/^$/ { if (uri != "" && ok) { print uri; exit } uri = ""; ok = 0; next }
		/^URIs:/ { uri = $2 }
		/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
		END { if (uri != "" && ok) print uri }' | head -n1)
	if [ -z "$m" ]; then
		m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk -v s="$suite" '$1 == "deb" && $3 == s { print $2; exit }')
	fi
	echo "${m:-http://deb.debian.org/debian}"
}

# host_apt_acquire copies this machine's apt Acquire settings (a proxy, a
# snapshot mirror's validity rules) into the root, so that apt there
# reaches the archive as apt here does.
host_apt_acquire() {
	grep -h '^ *Acquire::' /etc/apt/apt.conf /etc/apt/apt.conf.d/* 2>/dev/null >"$1/etc/apt/apt.conf.d/99host-acquire" || true
}

# base_root prints the cached root's directory, building it when missing.
base_root() {
	local m key dir tmp
	m=$(mirror)
	key=$(printf '%s\n' "$suite" "$m" "$base_pkgs" "minbase" | sha256sum | cut -c1-16)
	dir=$cache/$suite-$key
	if [ -f "$dir/.complete" ]; then
		say "reusing the cached $suite root $dir" >&2
		echo "$dir"
		return
	fi
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/build.XXXXXX")
	say "debootstrap --variant=minbase --include=$base_pkgs $suite from $m (cold: a few minutes)"
	if ! debootstrap --variant=minbase --include="$base_pkgs" "$suite" "$tmp" "$m" >"$cache/debootstrap.log" 2>&1; then
		tail -n 30 "$cache/debootstrap.log" >&2
		tail -n 30 "$tmp/debootstrap/debootstrap.log" >&2 2>/dev/null || true
		rm -rf --one-file-system "$tmp"
		echo "pristine: debootstrap failed" >&2
		exit 1
	fi
	rm -rf "$tmp/var/cache/apt/archives/"*.deb
	touch "$tmp/.complete"
	rm -rf --one-file-system "$dir"
	mv "$tmp" "$dir"
	echo "$dir"
}

work=$(mktemp -d /var/tmp/offload-pristine.XXXXXX)
roots=()

# in_root ROOT: the pids of processes whose root directory is ROOT.
in_root() {
	local p r
	for p in /proc/[0-9]*; do
		r=$(readlink "$p/root" 2>/dev/null) || continue
		[ "$r" = "$1" ] && echo "${p#/proc/}"
	done
	return 0
}

cleanup() {
	local rc=$? r pids m
	for r in "${roots[@]}"; do
		pids=$(in_root "$r")
		if [ -n "$pids" ]; then
			# shellcheck disable=SC2086
			kill -KILL $pids 2>/dev/null || true
			sleep 0.2
		fi
		# innermost first
		for m in $(awk -v r="$r" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r); do
			umount -l "$m" 2>/dev/null || true
		done
	done
	if awk -v w="$work" 'index($2, w) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
		echo "pristine: mounts remain under $work; not removing it" >&2
	else
		rm -rf --one-file-system "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# new_root BASE NAME: sets r to a writable pristine root at $work/NAME (an overlay of the
# cached one), with /proc, /dev, Go and the module cache mounted, the host's
# CA bundle, resolver and apt Acquire settings copied in.
new_root() {
	local base=$1
	r=$work/$2
	mkdir -p "$r" "$work/$2.upper" "$work/$2.work"
	roots+=("$r")
	if ! mount -t overlay overlay -o "lowerdir=$base,upperdir=$work/$2.upper,workdir=$work/$2.work" "$r" 2>/dev/null; then
		say "no overlayfs here: copying the root"
		cp -a "$base/." "$r/"
	fi
	mount -t proc proc "$r/proc"
	mount --rbind /dev "$r/dev"
	mount --make-rslave "$r/dev"
	mkdir -p "$r/usr/local/go" "$r/root/go/pkg/mod" "$r/root/.cache/go-build"
	if [ "${OFFLOAD_PRISTINE_COLD:-}" != 1 ]; then
		mkdir -p "$cache/gocache"
		mount --bind "$cache/gocache" "$r/root/.cache/go-build"
	fi
	mount --bind /usr/local/go "$r/usr/local/go"
	mount -o remount,bind,ro "$r/usr/local/go"
	local modcache
	modcache=$(/usr/local/go/bin/go env GOMODCACHE)
	if [ -d "$modcache" ]; then mount --bind "$modcache" "$r/root/go/pkg/mod"; fi
	cp /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/ca-certificates.crt"
	cp -L /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
	host_apt_acquire "$r"
}

# in_chroot ROOT CMD: CMD run by bash in ROOT, with a clean environment
# (only Go's proxy settings and any HTTP proxy cross over).
in_chroot() {
	local r=$1
	shift
	local envs=(HOME=/root USER=root LOGNAME=root TERM=dumb LANG=C.UTF-8
		PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		"GOPROXY=$(/usr/local/go/bin/go env GOPROXY)" "GOSUMDB=$(/usr/local/go/bin/go env GOSUMDB)"
		"GOPRIVATE=$(/usr/local/go/bin/go env GOPRIVATE)" "GONOSUMDB=$(/usr/local/go/bin/go env GONOSUMDB)")
	local v
	for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
		[ -n "${!v:-}" ] && envs+=("$v=${!v}")
	done
	env -i "${envs[@]}" chroot "$r" /bin/bash -euo pipefail -c "$*"
}

start=$(date +%s)
base=$(base_root)
say "root ready after $(($(date +%s) - start)) s"

if $quickstart; then
new_root "$base" quickstart
# A clone of this checkout's HEAD (what is committed is what is tested).
git init -q "$r/src/offload"
git -C "$r/src/offload" fetch -q "$repo" HEAD
git -C "$r/src/offload" checkout -q --detach FETCH_HEAD
say "cloned $(git -C "$r/src/offload" rev-parse --short HEAD) into the root; running scripts/run.sh --smoke there"
t0=$(date +%s)
in_chroot "$r" 'cd /src/offload && timeout 1800 ./scripts/run.sh --smoke'
# The headers run.sh must have installed (see the Go build cache above).
in_chroot "$r" 'for p in libpam0g-dev libcrypt-dev softhsm2 openssh-client; do
	dpkg -s $p 2>/dev/null | grep -q "^Status: install ok installed" || { echo "run.sh did not install $p" >&2; exit 1; }
done'
say "quick start passed in the pristine root (run.sh: $(($(date +%s) - t0)) s, total $(($(date +%s) - start)) s)"
fi

if [ -n "$deb" ]; then
	# shellcheck source=test/pristine/package.sh
	. "$repo/test/pristine/package.sh"
	package_test "$base" "$deb"
	say "package test passed (total $(($(date +%s) - start)) s)"
fi
