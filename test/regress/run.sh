#!/usr/bin/env bash
# OpenSSH's own regression suite (Debian's openssh-tests: OpenSSH 9.2p1's
# regress/ in /usr/lib/openssh/regress) against OpenSSH's /usr/sbin/sshd and
# against `offload sshd`, side by side, each test once per server. The
# harness is used as shipped: TEST_SSH_SSHD is OpenSSH's sshd, or a script
# that only runs `offload sshd "$@"`.
#
# Prints a table (test, openssh, offload) and fails when a test passes with
# OpenSSH, does not pass with offload and is not listed in
# test/regress/deviations (one line per test: the name, then why).
#
# Usage (as root: it creates a throwaway unprivileged user, removed at exit):
#   test/regress/run.sh [-j JOBS] [-t SECONDS] [-b OFFLOAD_BINARY] [-k] [-a] [TEST...]
#     -j  tests run at once (default 8: the tests mostly wait, 233 CPU seconds in all, both servers); each runs in its own network and
#         PID namespace, so ports never clash and nothing a test starts
#         outlives it
#     -t  per-test time limit in seconds (default 240); a test over it
#         counts as TIMEOUT
#     -b  the offload binary (default: built from this tree into a temp dir)
#     -k  keep the work directory (logs of every test) and say where
#     -a  also the slow tests (the SLOW list below), for a full comparison
#     TEST...  tests to run (default: $TESTS below)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
src=${REGRESS_DIR:-/usr/lib/openssh/regress}
jobs=8 limit=240 bin="" keep=0 all=0
while getopts "j:t:b:ka" opt; do
	case $opt in
	j) jobs=$OPTARG ;;
	t) limit=$OPTARG ;;
	b) bin=$OPTARG ;;
	k) keep=1 ;;
	a) all=1 ;;
	*) sed -n '2,25p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

# The tests run: those that exercise the server. Left out, and why:
#   client-only (no sshd involved, or only ssh/ssh-keygen/ssh-agent
#   parsing): agent-ptrace agent-timeout connect-uri host-expand
#   keygen-change keygen-comment keygen-convert keygen-knownhosts
#   keygen-moduli keygen-sshfp knownhosts knownhosts-command krl
#   localcommand percent sshcfgparse sshsig ssh-com*;
#   hostbased: needs the machine's own host key and name set up for
#   host-based authentication (TEST_SSH_HOSTBASED_AUTH), outside a test;
#   need DNS (SSHFP records): sshfp-connect;
#   need a PKCS #11 token in the agent: agent-pkcs11;
#   slow and about ciphers' speed only: cipher-speed.
TESTS="connect proxy-connect connect-privsep proto-version proto-mismatch
exit-status exit-status-signal envpass transfer banner dhgex stderr-data
stderr-after-eof broken-pipe yes-head login-timeout agent-subprocess keyscan
scp3 scp-uri sftp-cmds sftp-badcmds sftp-batch sftp-glob sftp-perm sftp-uri
reconfigure dynamic-forward forwarding multiplex reexec brokenkeys cfgparse
cfgmatch addrmatch forcecommand portnum multipubkey cert-file cfginclude
servcfginclude allow-deny-users authinfo channel-timeout connection-timeout
putty-kex putty-ciphers"
# Tests that need root (SUDO=sudo): the servers then run as root, with
# privilege separation and PAM, as in a deployment. Each gets its own /run
# (a tmpfs in its mount namespace: the tests name files there by $$, which
# PID namespaces make equal).
ROOT_TESTS="sftp-chroot keys-command principals-command agent-getpeereid"
TESTS="$TESTS $ROOT_TESTS"
# Server-side tests left out of the default (CI) set for time: each loops
# over every key type, cipher, MAC or key exchange, or moves hundreds of
# megabytes, and takes minutes per server on 2 CPUs. -a runs them too.
SLOW="rekey try-ciphers kextype integrity keytype limit-keytype cert-hostkey
cert-userkey key-options agent agent-restrict forward-control hostkey-agent
hostkey-rotate cfgmatchlisten scp sftp putty-transfer conch-ciphers"
[ "$all" = 1 ] && TESTS="$TESTS $SLOW"
[ $# -gt 0 ] && TESTS="$*"

die() { echo "regress: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root: it creates a throwaway user to run the suite as"
[ -f "$src/test-exec.sh" ] || die "$src/test-exec.sh missing: apt-get install openssh-tests"
[ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd missing: apt-get install openssh-server"
for t in unshare setpriv ip timeout useradd sudo; do
	command -v $t >/dev/null || die "$t missing"
done

start=$(date +%s)
work=$(mktemp -d /tmp/offload-regress.XXXXXX)
chmod 755 "$work"
user=offreg$$
cleanup() {
	rm -f "/etc/sudoers.d/$user"
	userdel "$user" 2>/dev/null || true
	if [ "$keep" = 1 ]; then
		echo "regress: logs kept in $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
useradd -M -N -g nogroup -d "$work/home" -s /bin/sh "$user" 2>/dev/null ||
	useradd -M -d "$work/home" -s /bin/sh "$user"
mkdir -p "$work/home" "$work/bin" "$work/results"
# OpenSSH's suite runs its root tests through sudo (README.regress: SUDO);
# the rule lives as long as the throwaway user.
echo "$user ALL=(ALL:ALL) NOPASSWD: ALL" >"$work/sudoers"
visudo -cqf "$work/sudoers" || die "visudo refused the rule for $user"
install -m 0440 "$work/sudoers" "/etc/sudoers.d/$user"
chown "$user" "$work/home"

if [ -z "$bin" ]; then
	(cd "$root" && go build -o "$work/bin/offload" ./cmd/offload) # as shipped: with cgo (PAM, PKCS #11)
else
	cp "$bin" "$work/bin/offload"
fi
chmod 755 "$work/bin/offload"
# The server under test, exactly as the suite runs sshd: no filtering.
printf '#!/bin/sh\nexec %s sshd "$@"\n' "$work/bin/offload" >"$work/bin/offload-sshd"
chmod 755 "$work/bin/offload-sshd"

# A template copy with the keys test-exec.sh makes (it reuses keys newer
# than ssh-keygen), so that each test does not generate them again.
cp -a "$src" "$work/template"
: >"$work/noop.sh"
chown -R "$user" "$work/template"

# as_user DIR SERVER SCRIPT: test-exec.sh as the user, in fresh network
# and PID namespaces (the last process of a test, a daemon left behind
# included, dies with it), with Debian's run-tests settings and no sudo.
# The suite's sshd_config has UsePAM yes, and Debian's pam_motd then
# prints /etc/motd on the client's stderr with either server, which tests
# comparing that stderr (banner) cannot expect: the test's mount
# namespace sees /etc/motd empty.
#
# The namespace's first process stays root and waits for the test (an
# unprivileged one would lose --kill-child's parent-death signal at its
# change of user): when timeout kills unshare, it dies, and with it every
# process of the namespace.
as_user() {
	local limit=$1 dir=$2 sshd=$3 script=$4 sudo=${5:-} run=""
	[ -n "$sudo" ] && run='mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -m 0755 /run/sshd && '
	timeout -k 5 "$limit" unshare --mount --net --pid --fork --kill-child --mount-proc \
		sh -c "ip link set lo up && { [ ! -f /etc/motd ] || mount --bind /dev/null /etc/motd; } && $run"'"$@"' sh \
		setpriv --reuid "$user" --regid "$(id -g "$user")" --init-groups \
		env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME="$work/home" \
		USER="$user" LOGNAME="$user" LANG=C.UTF-8 \
		OBJ="$dir" BUILDDIR="$dir" SUDO="$sudo" TEST_SHELL=sh TEST_SSH_SSH=ssh \
		TEST_SSH_SSHD="$sshd" TEST_SSH_SFTPSERVER=/usr/lib/openssh/sftp-server \
		TEST_SSH_PLINK=plink TEST_SSH_PUTTYGEN=puttygen TEST_SSH_CONCH=conch3 \
		TEST_SSH_IPV6=yes TEST_SSH_ECC=yes TEST_SSH_UNSAFE_PERMISSIONS=1 \
		sh "$dir/test-exec.sh" "$dir" "$script" </dev/null
}
export -f as_user
export work user limit ROOT_TESTS

as_user 900 "$work/template" /usr/sbin/sshd "$work/noop.sh" >"$work/template.log" 2>&1 ||
	{ cat "$work/template.log" >&2; die "key set-up failed"; }

# one SERVER TEST: runs a test, writes results/SERVER.TEST "status
# seconds cpu-seconds" (the CPU time of all its processes, from a cpuacct
# cgroup where the system has one, else "-": wall time on a busy machine
# says little about what the step costs on an idle one).
one() {
	local server=$1 test=$2 sshd=/usr/sbin/sshd dir status t0 rc=0 cg="" cpu=- sudo=""
	case " $ROOT_TESTS " in *" $test "*) sudo=sudo ;; esac
	[ "$server" = offload ] && sshd=$work/bin/offload-sshd
	# OBJ is named by a checksum of the test's name, which a symlink
	# gives: hostkey-agent drops the sshd_proxy lines that contain
	# "hostkey", the AuthorizedKeysFile among them were OBJ named after it
	dir=$work/run/$server/obj.$(printf %s "$test" | cksum | cut -d' ' -f1)
	mkdir -p "$(dirname "$dir")"
	cp -a "$work/template" "$dir"
	ln -s "$(basename "$dir")" "$work/run/$server/$test"
	if [ -d /sys/fs/cgroup/cpuacct ] && mkdir "/sys/fs/cgroup/cpuacct/$user.$server.$test" 2>/dev/null; then
		cg=/sys/fs/cgroup/cpuacct/$user.$server.$test
	fi
	t0=$(date +%s)
	bash -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs"; shift; as_user "$@"' _ "$cg" \
		"$limit" "$dir" "$sshd" "$dir/$test.sh" "$sudo" >"$work/run/$server/$test.out" 2>&1 || rc=$?
	if [ -n "$cg" ]; then
		cpu=$(awk '{printf "%.1f", $1 / 1e9}' "$cg/cpuacct.usage")
		for _ in 1 2 3 4 5; do rmdir "$cg" 2>/dev/null && break; sleep 1; done
	fi
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		status=TIMEOUT
	elif grep -q '^SKIPPED' "$work/run/$server/$test.out"; then
		status=skip
	elif [ $rc = 0 ]; then
		status=ok
	else
		status=FAIL
	fi
	echo "$status $(($(date +%s) - t0)) $cpu" >"$work/results/$server.$test"
}
export -f one

# Slow tests first, so that the pool ends together.
for t in $TESTS; do
	[ -f "$src/$t.sh" ] || die "no test $t in $src"
	for s in offload openssh; do echo "$s $t"; done
done | xargs -P "$jobs" -L 1 bash -c 'one "$@"' _

# The table and the verdict.
declare -A dev
while read -r name reason; do
	case $name in '' | '#'*) continue ;; esac
	dev[$name]=$reason
done <"$here/deviations"

bad=0 stale=""
printf '%-22s %-20s %-20s %s\n' test "openssh (s, cpu s)" "offload (s, cpu s)" note
for t in $TESTS; do
	read -r os ot oc <"$work/results/openssh.$t"
	read -r fs ft fc <"$work/results/offload.$t"
	note=""
	if [ "$os" = ok ] && [ "$fs" != ok ]; then
		if [ -n "${dev[$t]:-}" ]; then
			note="deviation: ${dev[$t]}"
		else
			note="REGRESSION"
			bad=$((bad + 1))
		fi
	elif [ -n "${dev[$t]:-}" ] && [ "$fs" = ok ]; then
		stale="$stale $t"
		note="listed deviation now passes"
	fi
	printf '%-22s %-20s %-20s %s\n' "$t" "$os $ot $oc" "$fs $ft $fc" "$note"
done
for t in $TESTS; do
	read -r os _ <"$work/results/openssh.$t"
	read -r fs _ <"$work/results/offload.$t"
	if [ "$os" = ok ] && [ "$fs" != ok ] && [ -z "${dev[$t]:-}" ]; then
		echo "=== $t with offload sshd: $fs"
		tail -n 30 "$work/run/offload/$t.out"
		[ -f "$work/run/offload/$t/failed-sshd.log" ] && tail -n 40 "$work/run/offload/$t/failed-sshd.log"
	fi
done
echo "regress: $(ls "$work/results" | wc -l) runs in $(($(date +%s) - start))s," \
	"$(cat "$work"/results/* | awk '$3 != "-" { c += $3 } END { printf "%.0f", c }') CPU seconds;" \
	"openssh ok: $(cat "$work"/results/openssh.* | grep -c '^ok'), offload ok: $(cat "$work"/results/offload.* | grep -c '^ok')"
[ -n "$stale" ] && echo "regress: deviations that no longer apply (prune test/regress/deviations):$stale"
if [ $bad -gt 0 ]; then
	echo "regress: $bad test(s) pass with OpenSSH's sshd and fail with offload sshd, and are not listed deviations"
	exit 1
fi
echo "regress: every test that passes with OpenSSH's sshd passes with offload sshd, or is a listed deviation"
