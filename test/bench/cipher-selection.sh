#!/bin/bash
# cipher-selection.sh OFFLOAD ROUNDS [LOGINS]: a 256 MiB upload (ssh host "cat >/dev/null")
# with the OpenSSH client on its defaults against offload sshd with CipherSelection client
# and measured, alternating; prints the negotiated cipher, the MB/s of the upload and the
# median wall time of LOGINS (default 5) "ssh host true" logins, the cost at login of a
# KEXINIT that waits for the client's. Binds 127.0.0.1:2417.
set -euo pipefail
bin=$1 rounds=${2:-3} logins=${3:-5}
work=$(mktemp -d); pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
ssh-keygen -q -t ed25519 -N '' -f "$work/hk"; ssh-keygen -q -t ed25519 -N '' -f "$work/ck"; cp "$work/ck.pub" "$work/ak"
head -c 256M /dev/urandom > "$work/payload"
for r in $(seq "$rounds"); do for sel in client measured; do
  printf "ListenAddress 127.0.0.1\nPort 2417\nHostKey $work/hk\nAuthorizedKeysFile $work/ak\nPermitRootLogin prohibit-password\nPidFile none\nStrictModes no\nLogLevel ERROR\nCalibrationCache $work/calib\nCipherSelection $sel\n" > "$work/c"
  "$bin" sshd -D -f "$work/c" 2>>"$work/log" & pid=$!
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/2417) 2>/dev/null && break; sleep 0.1; done
  ssh=(ssh -q -i "$work/ck" -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -p 2417 root@127.0.0.1)
  c=$("${ssh[@]}" -v true 2>&1 | grep -m1 "cipher:" | sed 's/.*cipher: //; s/ MAC.*//')
  t0=$(date +%s.%N); "${ssh[@]}" 'cat >/dev/null' < "$work/payload"; t1=$(date +%s.%N)
  ms=$(for _ in $(seq "$logins"); do a=$(date +%s%N); "${ssh[@]}" true; b=$(date +%s%N); echo $(((b - a) / 1000000)); done |
    sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
  awk -v s=$sel -v c="$c" -v t0=$t0 -v t1=$t1 -v ms="$ms" 'BEGIN {printf "%-9s %-32s %7.1f MB/s  login %s ms\n", s, c, 268435456/(t1-t0)/1e6, ms}'
  kill $pid; wait $pid 2>/dev/null || true; pid=
done; done
