# abcommon.sh: what ab.sh and login-ab.sh share. Sourced, not run.

# ab_workspace makes a temporary directory $work, removed on exit with the
# server $pid if one is running, and Ed25519 keys in it: the host's (hk)
# and the client's (ck), whose public half is authorized_keys.
ab_workspace() {
	work=$(mktemp -d)
	pid=
	trap ab_cleanup EXIT
	trap 'exit 130' INT TERM
	ssh-keygen -q -t ed25519 -N '' -f "$work/hk"
	ssh-keygen -q -t ed25519 -N '' -f "$work/ck"
	cp "$work/ck.pub" "$work/authorized_keys"
}

ab_cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$work"
}

# ab_port_free PORT fails, saying so, when something listens on PORT.
ab_port_free() {
	if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
		echo "$(basename "$0"): port $1 is already in use on 127.0.0.1" >&2
		return 1
	fi
}

# ab_wait_listen PORT waits up to 10 s for a server to listen on PORT.
ab_wait_listen() {
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return
		sleep 0.1
	done
}

# ab_start_offload BUILD[:OPTIONS] starts that offload build on $work/offload.conf
# with each comma-separated OPTION as -o OPTION; sets $pid.
ab_start_offload() {
	local bin=${1%%:*} opts=() list=() o
	[ "$bin" != "$1" ] && IFS=, read -r -a list <<<"${1#*:}"
	for o in "${list[@]}"; do opts+=(-o "$o"); done
	"$bin" sshd -D -f "$work/offload.conf" "${opts[@]}" 2>>"$work/server.log" &
	pid=$!
}

# ab_ticks PID prints the CPU ticks of process PID and all its descendants,
# live ones and the ones already reaped (utime, stime, cutime and cstime at
# every level): a separated offload's post-auth process and the session's
# programs live on after a transfer, OpenSSH's per-connection processes
# are reaped, and both are counted.
ab_ticks() {
	local p sum=0
	for p in $(ps -o pid= --ppid "$1"); do
		sum=$((sum + $(ab_ticks "$p")))
	done
	[ -r "/proc/$1/stat" ] && sum=$((sum + $(awk '{print $14+$15+$16+$17}' "/proc/$1/stat" 2>/dev/null || echo 0)))
	echo $sum
}
