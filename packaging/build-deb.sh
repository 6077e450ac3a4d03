#!/usr/bin/env bash
# Builds the Debian package offload_VERSION_ARCH.deb with dpkg-buildpackage
# from debian/ and checks it with lintian.
#
#   packaging/build-deb.sh [OUTDIR]      (default: ./dist)
#
# Needs debhelper, dpkg-dev, libpam0g-dev and libcrypt-dev (apt-get
# install; as root it installs them), lintian for the check, and Go 1.26 on
# PATH or in /usr/local/go. The tree built is the checkout's files as they
# are (tracked and untracked, less .gitignore), copied to a temporary directory, so the checkout stays
# clean. lintian's tags that remain are explained in
# debian/offload.lintian-overrides; any other tag fails the build.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:-$root/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export PATH=$PATH:/usr/local/go/bin

need=()
command -v dpkg-buildpackage >/dev/null || need+=(dpkg-dev)
command -v dh >/dev/null || need+=(debhelper)
command -v lintian >/dev/null || need+=(lintian)
[ -e /usr/include/security/pam_appl.h ] || need+=(libpam0g-dev)
[ -e /usr/include/crypt.h ] || need+=(libcrypt-dev)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "== installing ${need[*]}" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	else
		echo "build-deb.sh: missing; install with: sudo apt-get install --no-install-recommends ${need[*]}" >&2
		exit 1
	fi
fi
command -v go >/dev/null || { echo "build-deb.sh: Go 1.26 is not on PATH" >&2; exit 1; }

version=$(dpkg-parsechangelog -l debian/changelog -S Version)
arch=$(dpkg --print-architecture)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$work/offload-$version
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard | xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' _ |
	tar --null -T - -cf - | tar -xf - -C "$src"

echo "== dpkg-buildpackage -b (offload $version, $arch)" >&2
(cd "$src" && dpkg-buildpackage -b -us -uc >"$work/build.log" 2>&1) || {
	tail -n 40 "$work/build.log" >&2
	echo "build-deb.sh: dpkg-buildpackage failed" >&2
	exit 1
}
deb=offload_${version}_${arch}.deb
cp "$work/$deb" "$out/"

echo "== lintian $deb" >&2
# --fail-on warning: errors and warnings fail; info and pedantic tags are
# printed. Overridden tags are listed in debian/offload.lintian-overrides.
lintian --fail-on error,warning --display-info "$out/$deb" >&2
echo "$out/$deb"
