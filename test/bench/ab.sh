#!/bin/bash
# ab.sh: A/B test of one pipe transfer across several sshd builds.
#
#   test/bench/ab.sh [-r ROUNDS] [-s SIZE] [-d up|down] [-c CIPHER] SERVER...
#
# SERVER is the path of an offload binary, with extra -o settings after a
# colon, separated by commas (/tmp/off:PrivilegeSeparation=no), or
# "openssh" for the system's /usr/sbin/sshd. Each round starts every server in turn on 127.0.0.1 and
# moves SIZE (default 1G) through `ssh host 'cat >/dev/null' < payload`
# (up) or `ssh host cat payload | cat >/dev/null` (down), printing the
# throughput, the server's CPU seconds (its whole process tree, live
# and reaped: OpenSSH's per-connection processes, offload's post-auth
# process, the shell and cat) and the client's (ssh, and the local cat of
# a download), then per server the medians. Server and client share the
# machine's CPUs: a rate above 2 CPUs / (server + client CPU per GiB) on
# two CPUs cannot be reached by either server.
# Servers alternate within a round, so a busy neighbour slows all alike.
# test/bench (the Go harness) is the full benchmark; this script is for
# comparing two builds of offload, which the harness cannot.
set -euo pipefail

rounds=3 size=1G dir=up cipher=aes128-gcm@openssh.com
while getopts "r:s:d:c:" o; do
	case $o in
	r) rounds=$OPTARG ;;
	s) size=$OPTARG ;;
	d) dir=$OPTARG ;;
	c) cipher=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-r ROUNDS] [-s SIZE] [-d up|down] [-c CIPHER] SERVER..." >&2; exit 2; }
for t in ssh ssh-keygen; do
	command -v $t >/dev/null || { echo "ab.sh: $t is missing (apt-get install openssh-client)" >&2; exit 1; }
done
for s in "$@"; do
	if [ "$s" = openssh ]; then
		[ -x /usr/sbin/sshd ] || { echo "ab.sh: /usr/sbin/sshd is missing (apt-get install openssh-server)" >&2; exit 1; }
		[ -d /run/sshd ] || mkdir -p /run/sshd 2>/dev/null || { echo "ab.sh: OpenSSH needs /run/sshd (run as root)" >&2; exit 1; }
	else
		[ -x "${s%%:*}" ] || { echo "ab.sh: ${s%%:*} is not an executable" >&2; exit 1; }
	fi
done

# shellcheck source=abcommon.sh
. "$(dirname "$0")/abcommon.sh"
ab_workspace

head -c "$size" /dev/urandom >"$work/payload"
bytes=$(stat -c %s "$work/payload")
common="ListenAddress 127.0.0.1
HostKey $work/hk
AuthorizedKeysFile $work/authorized_keys
PasswordAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
Ciphers aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr
MACs hmac-sha2-256-etm@openssh.com
KexAlgorithms curve25519-sha256
HostKeyAlgorithms ssh-ed25519
AcceptEnv SHLVL
LogLevel ERROR
PidFile none
StrictModes no"
printf '%s\nPort 2398\nUsePAM no\nUseDNS no\nPrintMotd no\nPrintLastLog no\n' "$common" >"$work/openssh.conf"
printf '%s\nPort 2399\nCalibrationCache %s/calib\n' "$common" "$work" >"$work/offload.conf"

# one SERVER: starts it, moves the payload once, prints a line, stops it.
one() {
	local s=$1 port=2399
	[ "$s" = openssh ] && port=2398
	ab_port_free "$port" || exit 1
	if [ "$s" = openssh ]; then
		/usr/sbin/sshd -D -e -f "$work/openssh.conf" 2>>"$work/server.log" &
		pid=$!
	else
		ab_start_offload "$s"
	fi
	ab_wait_listen "$port"
	if ! kill -0 $pid 2>/dev/null; then
		echo "ab.sh: $s did not start; its log:" >&2
		cat "$work/server.log" >&2
		exit 1
	fi
	local ssh=(ssh -q -i "$work/ck" -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no
		-o SetEnv=SHLVL=1 -c "$cipher" -p "$port" "$(id -un)@127.0.0.1")
	"${ssh[@]}" true # offload calibrates a cipher on first use; not timed
	local c0 t0 t1 c1
	c0=$(ab_ticks $pid) t0=$(date +%s.%N)
	(
		if [ "$dir" = up ]; then
			"${ssh[@]}" 'cat >/dev/null' <"$work/payload"
		else
			"${ssh[@]}" "cat $work/payload" | cat >/dev/null
		fi
		times >"$work/times" # second line: the children's user and system time
	)
	t1=$(date +%s.%N) c1=$(ab_ticks $pid)
	kill $pid && wait $pid 2>/dev/null || true
	pid=
	local client
	client=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] }; print n }' "$work/times")
	awk -v s="$s" -v b="$bytes" -v t0="$t0" -v t1="$t1" -v c="$((c1 - c0))" -v hz="$(getconf CLK_TCK)" -v cl="$client" \
		'BEGIN { w = t1 - t0; g = b / 2^30
		printf "%-36s %8.1f MB/s  server CPU %5.2f s/GiB  client CPU %5.2f s/GiB\n", s, b / w / 1e6, c / hz / g, cl / g }' |
		tee -a "$work/runs"
}

# medians prints, per server, the median of each column over the rounds.
medians() {
	echo "# medians: MB/s, server CPU s/GiB, client CPU s/GiB"
	local s
	for s in "$@"; do
		awk -v s="$s" '$1 == s { print $2, $6, $10 }' "$work/runs" | awk -v s="$s" '
			{ r[NR] = $1; c[NR] = $2; k[NR] = $3 }
			function med(a, n,   i, j, t) {
				for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
				return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			}
			END { printf "%-36s %8.1f MB/s  server CPU %5.2f s/GiB  client CPU %5.2f s/GiB\n", s, med(r, NR), med(c, NR), med(k, NR) }'
	done
}

echo "# $dir, $cipher, $size, $rounds rounds, $(date -u +%H:%M) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
	for s in "$@"; do one "$s"; done
done
medians "$@"
