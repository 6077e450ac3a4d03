#!/bin/bash
# login-latency.sh: login latency of offload sshd with CipherSelection measured
# against client, per client on its default algorithms.
#
#   test/bench/login-latency.sh [-r ROUNDS] [-n LOGINS] OFFLOAD
#
# Each round starts OFFLOAD with CipherSelection client and measured (which
# goes first alternates) on 127.0.0.1:2419 and times LOGINS/ROUNDS logins,
# one after another, of each client: the OpenSSH client (`ssh host true`,
# process start included), paramiko (connect and authenticate, in one
# Python process) and golang.org/x/crypto/ssh (test/bench/loginload -times
# -defaults). It prints, per client and setting, the median and p95 of the
# LOGINS (default 200) wall times in ms and the ciphers the server logged
# for them (cipher_in, and how many were steered). A client that waited for
# the server's KEXINIT under measured would show it as up to 250 ms more.
set -euo pipefail
rounds=4 n=200
while getopts r:n: o; do
	case $o in
	r) rounds=$OPTARG ;;
	n) n=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3 # Debian's python3-paramiko, not a pyenv shim's
for t in ssh ssh-keygen $py; do
	command -v $t >/dev/null || { echo "login-latency.sh: $t is missing" >&2; exit 1; }
done
$py -c 'import paramiko' 2>/dev/null || { echo "login-latency.sh: python3-paramiko is missing" >&2; exit 1; }
bin=$(realpath "$1") per=$((n / rounds))

# shellcheck source=abcommon.sh
. "$(dirname "$0")/abcommon.sh"
ab_workspace
here=$(cd "$(dirname "$0")" && pwd)
(cd "$here" && go build -o "$work/loginload" ./loginload)
user=$(id -un)
cat >"$work/offload.conf" <<CONF
ListenAddress 127.0.0.1
Port 2419
HostKey $work/hk
AuthorizedKeysFile $work/authorized_keys
PasswordAuthentication no
PermitRootLogin prohibit-password
LogLevel INFO
PidFile none
StrictModes no
AcceptEnv SHLVL
CalibrationCache $work/calib
CONF
cat >"$work/pm.py" <<'PY'
import sys, time, paramiko
key = paramiko.Ed25519Key.from_private_key_file(sys.argv[1])
for _ in range(int(sys.argv[3])):
    t = time.perf_counter()
    c = paramiko.SSHClient()
    c.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    c.connect("127.0.0.1", port=2419, username=sys.argv[2], pkey=key, allow_agent=False, look_for_keys=False)
    c.close()
    print("%.3f" % ((time.perf_counter() - t) * 1000))
PY
ssh=(ssh -q -i "$work/ck" -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o BatchMode=yes -o SetEnv=SHLVL=1 -p 2419 "$user@127.0.0.1")
# SHLVL: bash reads ~/.bashrc for a remote command unless nested, and a slow
# one (pyenv init takes seconds) would swamp every figure (as in the harness).

# logins SEL CLIENT: PER logins of CLIENT, their ms appended to $work/SEL.CLIENT.
logins() {
	local out="$work/$1.$2"
	case $2 in
	openssh) for _ in $(seq "$per"); do
		local a b
		a=$(date +%s%N); "${ssh[@]}" true; b=$(date +%s%N)
		awk -v d=$((b - a)) 'BEGIN {printf "%.3f\n", d / 1e6}'
	done >>"$out" ;;
	paramiko) "$py" "$work/pm.py" "$work/ck" "$user" "$per" >>"$out" ;;
	x/crypto | xcrypto) "$work/loginload" -addr 127.0.0.1:2419 -key "$work/ck" -user "$user" -times -defaults -n "$per" >>"$out" ;;
	esac
}

clients=(openssh paramiko xcrypto)
for r in $(seq "$rounds"); do
	order=(client measured)
	[ $((r % 2)) -eq 0 ] && order=(measured client)
	for sel in "${order[@]}"; do
		ab_port_free 2419 || exit 1
		: >"$work/server.log"
		ab_start_offload "$bin:CipherSelection=$sel"
		ab_wait_listen 2419
		for c in "${clients[@]}"; do
			logins "$sel" "$c"
			grep -h "key exchange done" "$work/server.log" | sed 's/.*cipher_in=\([^ ]*\).*/\1/' >>"$work/$sel.$c.ciphers" || true
			grep -hc "cipher_in_steered" "$work/server.log" >>"$work/$sel.$c.steered" || true
			: >"$work/server.log"
		done
		kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
	done
done
printf "%-9s %-9s %6s %9s %9s  %s\n" client selection logins median-ms p95-ms "ciphers (server log), steered"
for c in "${clients[@]}"; do for sel in client measured; do
	st=$(sort -n "$work/$sel.$c" | awk '{v[NR]=$1} END {i=int(NR*0.95+0.5); if (i<1) i=1; printf "%d %.1f %.1f", NR, v[int((NR+1)/2)], v[i]}')
	ci=$(sort "$work/$sel.$c.ciphers" | uniq -c | awk '{printf "%s%s x%d", (NR>1?", ":""), $2, $1}')
	stn=$(awk '{s+=$1} END {print s+0}' "$work/$sel.$c.steered")
	read -r cnt med p95 <<<"$st"
	printf "%-9s %-9s %6s %9s %9s  %s; steered %s\n" "$c" "$sel" "$cnt" "$med" "$p95" "$ci" "$stn"
done; done
