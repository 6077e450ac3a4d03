#!/bin/bash
# login-ab.sh: A/B test of logins per second across builds of offload sshd.
#
#   test/bench/login-ab.sh [-r ROUNDS] [-n LOGINS] [-c CLIENTS] BUILD[:OPTIONS]...
#
# BUILD is the path of an offload binary; OPTIONS, after a colon, are
# extra -o settings separated by commas (e.g. /tmp/off:PrivilegeSeparation=no).
# Each round starts every build in turn on 127.0.0.1, warms it up with 200
# logins, then times LOGINS logins (default 4000) from CLIENTS goroutines
# at once (default 16) with test/bench/loginload, and reads the CPU of the
# server's whole process tree (monitor, workers, post-auth process) from
# /proc before and after. It prints each run, then per build the median
# logins/s and server CPU per login. The client shares the machine, as in
# the harness (go run ./test/bench -only handshakes), which compares
# offload with OpenSSH but not two builds.
set -euo pipefail
rounds=5 n=4000 clients=16
while getopts r:n:c: o; do
	case $o in
	r) rounds=$OPTARG ;;
	n) n=$OPTARG ;;
	c) clients=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
command -v ssh-keygen >/dev/null || { echo "login-ab.sh: ssh-keygen is missing (apt-get install openssh-client)" >&2; exit 1; }

# shellcheck source=abcommon.sh
. "$(dirname "$0")/abcommon.sh"
ab_workspace

here=$(cd "$(dirname "$0")" && pwd)
(cd "$here" && go build -o "$work/loginload" ./loginload)
cat >"$work/offload.conf" <<CONF
ListenAddress 127.0.0.1
Port 2399
HostKey $work/hk
AuthorizedKeysFile $work/authorized_keys
PasswordAuthentication no
PermitRootLogin prohibit-password
KexAlgorithms curve25519-sha256
HostKeyAlgorithms ssh-ed25519
LogLevel ERROR
PidFile none
StrictModes no
MaxStartups 200
CalibrationCache $work/calib
CONF

# one BUILD[:OPTIONS]: prints "build logins/s ms-per-login".
one() {
	ab_port_free 2399 || exit 1
	ab_start_offload "$1"
	ab_wait_listen 2399
	local load=("$work/loginload" -key "$work/ck" -user "$(id -un)" -c "$clients")
	"${load[@]}" -n 200 >/dev/null
	local c0 c1 out
	c0=$(ab_ticks $pid)
	out=$("${load[@]}" -n "$n")
	c1=$(ab_ticks $pid)
	kill $pid && wait $pid 2>/dev/null || true
	pid=
	awk -v b="$1" -v out="$out" -v n="$n" -v c="$((c1 - c0))" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { split(out, f, " "); r = f[5]; sub(/\/s,?/, "", r); printf "%s %s %.3f\n", b, r, 1000 * c / hz / n }'
}

echo "# $n logins from $clients clients, $rounds rounds, $(date -u +%H:%M) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
	for b in "$@"; do
		one "$b" | tee -a "$work/runs"
	done
done
echo "# medians: logins/s, server CPU ms per login"
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for b in "$@"; do
	printf '%-40s %8s/s  %6s ms\n' "$b" \
		"$(awk -v b="$b" '$1 == b { print $2 }' "$work/runs" | median)" \
		"$(awk -v b="$b" '$1 == b { print $3 }' "$work/runs" | median)"
done
