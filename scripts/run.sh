#!/usr/bin/env bash
# Quick start: an offload sshd on 127.0.0.1 whose ed25519 host key lives in
# a SoftHSM token.
#
#   ./scripts/run.sh            (or: make run)
#   ./scripts/run.sh --smoke    the same, then log in with ssh and sftp once,
#                               stop the server and exit 0 on success (for CI)
#
# It installs every build and run dependency that is missing (gcc,
# libc6-dev, libpam0g-dev, libcrypt-dev, softhsm2, openssh-client) as root
# with apt-get; otherwise it prints the apt-get install line and stops. It
# builds bin/offload, makes a
# SoftHSM token under the state directory with a random PIN kept in
# STATE/pin (mode 0600), generates the host key inside the token, makes a
# client key when you have none in ~/.ssh, writes STATE/sshd_config and
# runs `offload sshd -d` in the foreground, after printing the ssh and sftp
# commands that connect. Ctrl-C stops it. Running it again reuses the
# token, the keys and the port.
#
# Environment:
#   OFFLOAD_STATE   state directory (default ./state)
#   OFFLOAD_PORT    port to listen on (default 2222, or the next free one)
#
# PINs never appear on a command line: softhsm2-util and pkcs11-tool read
# them from a pseudo-terminal fed from the PIN file, and offload reads
# STATE/pin itself (PKCS11PinSource).
set -euo pipefail
cd "$(dirname "$0")/.."
smoke=false
case "${1:-}" in
--smoke) smoke=true ;;
"") ;;
*) echo "usage: $0 [--smoke]" >&2; exit 2 ;;
esac
root=$(pwd)
state=${OFFLOAD_STATE:-$root/state}
mkdir -p "$state"
state=$(cd "$state" && pwd)
umask 077

say() { echo "== $*" >&2; }
die() { echo "run.sh: $*" >&2; exit 1; }

# --- tools -----------------------------------------------------------------
find_module() {
	for m in /usr/lib/softhsm/libsofthsm2.so /usr/lib/*-linux-gnu/softhsm/libsofthsm2.so \
		/usr/lib64/pkcs11/libsofthsm2.so /usr/local/lib/softhsm/libsofthsm2.so \
		/opt/homebrew/lib/softhsm/libsofthsm2.so; do
		[ -e "$m" ] && { echo "$m"; return 0; }
	done
	return 1
}

# Every build and run dependency, as Debian 12 packages. The build needs a
# C compiler and the PAM and libcrypt headers because the PAM binding and
# the password check are cgo (a build with CGO_ENABLED=0 has neither PAM nor
# PKCS #11 and is not what this quick start runs); docs/install.md says why
# run.sh installs them rather than loading PAM at run time.
install_tools() {
	local pkgs=()
	command -v go >/dev/null || die "Go is not installed (https://go.dev/doc/install); offload needs Go 1.26"
	command -v "$(go env CC 2>/dev/null || echo gcc)" >/dev/null || pkgs+=(gcc)
	[ -e /usr/include/stdlib.h ] || pkgs+=(libc6-dev)
	[ -e /usr/include/security/pam_appl.h ] || pkgs+=(libpam0g-dev)
	[ -e /usr/include/crypt.h ] || pkgs+=(libcrypt-dev)
	command -v softhsm2-util >/dev/null && find_module >/dev/null || pkgs+=(softhsm2)
	command -v ssh >/dev/null && command -v ssh-keygen >/dev/null && command -v sftp >/dev/null || pkgs+=(openssh-client)
	command -v script >/dev/null || pkgs+=(bsdutils)
	[ ${#pkgs[@]} -eq 0 ] && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		say "installing ${pkgs[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
	elif command -v apt-get >/dev/null; then
		echo "run.sh: missing build or run dependencies; install them with:" >&2
		echo "  sudo apt-get install --no-install-recommends ${pkgs[*]}" >&2
		exit 1
	else
		die "missing (Debian package names): ${pkgs[*]}"
	fi
}

# --- build -----------------------------------------------------------------
build() {
	say "building bin/offload"
	go build -o bin/offload ./cmd/offload
	has_command sshd || die "bin/offload has no sshd command"
}

# has_command NAME: whether bin/offload lists the subcommand NAME.
has_command() {
	local usage
	usage=$(bin/offload help 2>&1 || true)
	grep -q "^ *$1 " <<<"$usage"
}

# --- token -----------------------------------------------------------------
# on_tty CMD... runs CMD on a pseudo-terminal whose input is stdin, so that
# tools that read PINs only from a terminal get them without a command-line
# argument. The terminal's echo goes to /dev/null.
on_tty() {
	local cmd
	printf -v cmd '%q ' "$@"
	script -q -e -c "$cmd" /dev/null >/dev/null
}

softhsm_setup() {
	module=$(find_module) || die "libsofthsm2.so not found"
	export SOFTHSM2_CONF="$state/softhsm2.conf"
	mkdir -p "$state/tokens"
	if [ ! -f "$SOFTHSM2_CONF" ]; then
		printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n' \
			"$state/tokens" >"$SOFTHSM2_CONF"
	fi
	if [ ! -s "$state/pin" ]; then
		od -An -N12 -tx1 /dev/urandom | tr -d ' \n' >"$state/pin"
		chmod 600 "$state/pin"
	fi
	if softhsm2-util --show-slots 2>/dev/null | grep -q 'Label: *offload *$'; then
		say "reusing the SoftHSM token \"offload\" in $state/tokens"
		return
	fi
	say "creating the SoftHSM token \"offload\" in $state/tokens"
	local so
	so=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
	{ echo "$so"; echo "$so"; cat "$state/pin"; echo; cat "$state/pin"; echo; } |
		on_tty softhsm2-util --init-token --free --label offload ||
		die "softhsm2-util --init-token failed"
	softhsm2-util --show-slots 2>/dev/null | grep -q 'Label: *offload *$' || die "the token was not created"
}

host_key_uri() { echo "pkcs11:token=offload;object=hostkey"; }

host_key() {
	local uri
	uri=$(host_key_uri)
	if [ -f "$state/hostkey.done" ]; then
		say "reusing the host key $uri"
		return
	fi
	# A key left by an interrupted run: use it rather than make a second
	# one under the same label.
	if has_command keys && bin/offload keys pub "$uri?module-path=$module&pin-source=$state/pin" >"$state/hostkey.pub" 2>/dev/null; then
		say "reusing the host key $uri"
		touch "$state/hostkey.done"
		return
	fi
	say "generating the ed25519 host key $uri in the token"
	if has_command keys; then
		bin/offload keys generate -type ed25519 "$uri?module-path=$module&pin-source=$state/pin" >"$state/hostkey.pub"
		say "host public key: $(cut -d' ' -f1,2 "$state/hostkey.pub")"
	elif command -v pkcs11-tool >/dev/null; then
		# pkcs11-tool flushes the terminal before its prompt: wait for it.
		{ sleep 1; cat "$state/pin"; echo; } | on_tty pkcs11-tool --module "$module" --token-label offload --login \
			--keypairgen --key-type EC:edwards25519 --label hostkey --id 01 ||
			die "pkcs11-tool could not generate the key"
	else
		die "neither 'offload keys' nor pkcs11-tool (apt-get install opensc) can generate the key"
	fi
	touch "$state/hostkey.done"
}

# --- client key ------------------------------------------------------------
client_key() {
	local candidates=("$HOME/.ssh/id_ed25519" "$HOME/.ssh/id_ecdsa" "$HOME/.ssh/id_rsa")
	if $smoke; then
		candidates=() # --smoke uses its own key: yours may want a passphrase
	fi
	for k in "${candidates[@]}"; do
		if [ -f "$k" ] && [ -f "$k.pub" ]; then
			client="$k"
			return
		fi
	done
	client="$state/client_ed25519"
	if [ ! -f "$client" ]; then
		say "making a client key $client (you have none in ~/.ssh)"
		ssh-keygen -q -t ed25519 -N '' -C "offload-quickstart" -f "$client"
	fi
}

# --- port and config -------------------------------------------------------
# port_busy PORT: whether something listens on 127.0.0.1:PORT. ss looks
# without connecting; the /dev/tcp probe is the fallback.
port_busy() {
	if command -v ss >/dev/null; then
		[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
	else
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
	fi
}

# loose_parent: whether a directory above the state directory is writable
# by group or others (like /tmp), which StrictModes refuses, as OpenSSH does.
loose_parent() {
	local d=$state
	while [ "$d" != / ]; do
		d=$(dirname "$d")
		[ -n "$(find "$d" -maxdepth 0 -perm /022 2>/dev/null)" ] && return 0
	done
	return 1
}

pick_port() {
	port=${OFFLOAD_PORT:-}
	if [ -z "$port" ] && [ -f "$state/port" ]; then port=$(cat "$state/port"); fi
	port=${port:-2222}
	while port_busy "$port"; do
		[ -n "${OFFLOAD_PORT:-}" ] && die "port $port is in use"
		port=$((port + 1))
	done
	echo "$port" >"$state/port"
}

write_config() {
	cat "$client.pub" >"$state/authorized_keys"
	cat >"$state/sshd_config" <<EOF
# Written by scripts/run.sh; edit freely, run.sh rewrites it on each start.
Port $port
ListenAddress 127.0.0.1
HostKey $(host_key_uri)
PKCS11Module $module
PKCS11PinSource $state/pin
PKCS11Environment SOFTHSM2_CONF=$SOFTHSM2_CONF
PKCS11StateDir $state
AuthorizedKeysFile $state/authorized_keys
CalibrationCache $state/calibration
PidFile $state/offload-sshd.pid
EOF
	if loose_parent; then
		printf '# A directory above %s is writable by others: check no modes.\nStrictModes no\n' "$state" >>"$state/sshd_config"
	fi
	bin/offload sshd -t -f "$state/sshd_config" || die "offload sshd -t rejected $state/sshd_config"
}

# --- run -------------------------------------------------------------------
# commands writes the commands the quick start prints, one per line, to
# STATE/commands; print_commands shows them; --smoke runs them as printed.
commands() {
	local user
	user=$(id -un)
	{
		echo "ssh -p $port -i $client -o UserKnownHostsFile=$state/known_hosts $user@127.0.0.1"
		echo "sftp -P $port -i $client -o UserKnownHostsFile=$state/known_hosts $user@127.0.0.1"
		echo "$root/bin/offload sshd -T -f $state/sshd_config"
	} >"$state/commands"
}

print_commands() {
	commands
	echo
	echo "offload sshd is listening on 127.0.0.1:$port with its host key in SoftHSM."
	echo "Connect with:"
	echo
	sed -n '1,2s/^/  /p' "$state/commands"
	echo
	echo "Effective configuration: $(sed -n 3p "$state/commands")"
	echo "Stop with Ctrl-C."
	echo
}

# known_hosts writes STATE/known_hosts with the host key read from the
# token (or, without `offload keys`, from the running server).
known_hosts() {
	local uri
	uri="$(host_key_uri)?module-path=$module&pin-source=$state/pin"
	if has_command keys && bin/offload keys pub -known-hosts "[127.0.0.1]:$port" "$uri" >"$state/known_hosts.new" 2>/dev/null; then
		mv "$state/known_hosts.new" "$state/known_hosts"
	elif command -v ssh-keyscan >/dev/null; then
		ssh-keyscan -p "$port" -t ed25519 127.0.0.1 2>/dev/null >"$state/known_hosts" || true
	fi
	rm -f "$state/known_hosts.new"
}

wait_listening() {
	for _ in $(seq 100); do
		port_busy "$port" && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

serve() {
	say "starting bin/offload sshd -d -f $state/sshd_config"
	bin/offload sshd -d -f "$state/sshd_config" &
	local pid=$!
	trap 'kill -TERM $pid 2>/dev/null; wait $pid' INT TERM
	wait_listening "$pid" || { wait "$pid" || true; die "offload sshd did not start"; }
	known_hosts
	print_commands
	if $smoke; then
		smoke_test "$pid"
		return
	fi
	wait "$pid"
}

# smoke_test PID: run every printed command as printed, from a shell
# without SOFTHSM2_CONF (only this script sets it; the configuration
# carries it in PKCS11Environment): a command over ssh, a listing over
# sftp, the -T line; then stop the server.
smoke_test() {
	local rc=0 sshc sftpc tc out
	sshc=$(sed -n 1p "$state/commands")
	sftpc=$(sed -n 2p "$state/commands")
	tc=$(sed -n 3p "$state/commands")
	say "smoke test: $sshc"
	# BatchMode: fail rather than ask; it goes before the destination.
	out=$(env -u SOFTHSM2_CONF bash -c "${sshc/#ssh /ssh -o BatchMode=yes } echo offload-smoke-ok" </dev/null) || rc=1
	[ "$out" = offload-smoke-ok ] || { echo "ssh printed: $out" >&2; rc=1; }
	say "smoke test: $sftpc"
	echo "ls $state" | env -u SOFTHSM2_CONF bash -c "${sftpc/#sftp /sftp -o BatchMode=yes -b - }" >/dev/null || rc=1
	say "smoke test: $tc"
	out=$(env -u SOFTHSM2_CONF bash -c "$tc" 2>&1) || { echo "$out" >&2; rc=1; }
	grep -q '^# hostkey .*held by pkcs11$' <<<"$out" || { echo "the -T output names no host key in the token:" >&2; echo "$out" >&2; rc=1; }
	kill -TERM "$1"
	wait "$1" || rc=1
	if [ $rc -eq 0 ]; then say "smoke test passed"; else say "smoke test FAILED"; fi
	return $rc
}

install_tools
build
softhsm_setup
host_key
client_key
pick_port
write_config
serve
