# shellcheck shell=bash
# Sourced by test/pristine/run.sh --package DEB: installs the package with
# dpkg -i in a second pristine root (an overlay of the same cached one),
# starts offload sshd as offload-sshd.service would (no systemd in a
# chroot: the unit's Environment=, directories, ExecStartPre= and
# ExecStart= lines, run as written), logs in with ssh, stops it, removes
# and purges the package and checks what is left.

# unit_lines KEY: the values of KEY= in the installed service unit.
unit_lines() {
	sed -n "s/^$1=//p" "$r/lib/systemd/system/offload-sshd.service"
}

# free_port: a port nothing listens on at 127.0.0.1.
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	echo "pristine: no free port" >&2
	return 1
}

package_test() {
	local base=$1 deb=$2 port envs start pre
	new_root "$base" package
	cp "$deb" "$r/tmp/offload.deb"
	say "package: dpkg -i $(basename "$deb") in a pristine root"
	in_chroot "$r" 'export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		# dependencies first, from the archive, then the package with dpkg -i
		deps=$(dpkg-deb -f /tmp/offload.deb Depends | sed "s/([^)]*)//g; s/,/ /g; s/|[^ ]*//g")
		apt-get install -y -qq --no-install-recommends $deps >/dev/null
		dpkg -i /tmp/offload.deb
		dpkg -s offload | grep -q "^Status: install ok installed"'

	# What the package installed.
	in_chroot "$r" 'set -x
		test -x /usr/bin/offload
		test -f /lib/systemd/system/offload-sshd.service
		test -f /lib/systemd/system/offload-sshd.socket
		test -f /etc/pam.d/offload-sshd
		for m in man1/offload.1 man8/offload-sshd.8 man5/offload-sshd_config.5; do test -f /usr/share/man/$m.gz; done
		getent passwd sshd
		for t in ed25519 ecdsa rsa; do
			test "$(stat -c %a /etc/offload/ssh_host_${t}_key)" = 600
			test -f /etc/offload/ssh_host_${t}_key.pub
		done
		# installed disabled: enabling it would stop OpenSSH
		test ! -e /etc/systemd/system/multi-user.target.wants/offload-sshd.service' 2>&1 | sed 's/^/   /'

	port=$(free_port)
	printf 'Port %s\nListenAddress 127.0.0.1\n' "$port" >"$r/etc/offload/sshd_config.d/ci.conf"
	envs=$(unit_lines Environment | tr '\n' ' ')
	pre=$(unit_lines ExecStartPre)
	start=$(unit_lines ExecStart)
	say "package: starting the unit's ExecStart= on 127.0.0.1:$port: $start"
	# As systemd would: StateDirectory=, CacheDirectory=, RuntimeDirectory=.
	in_chroot "$r" "install -d -m 0700 /var/lib/offload; install -d /var/cache/offload /run/offload
		env $envs $pre
		env $envs $start >/tmp/offload-sshd.log 2>&1 &
		echo \$! >/tmp/offload-sshd.pid
		mkdir -m 700 -p /root/.ssh
		ssh-keygen -q -t ed25519 -N '' -f /root/.ssh/id_ed25519
		cat /root/.ssh/id_ed25519.pub >/root/.ssh/authorized_keys
		echo \"[127.0.0.1]:$port \$(cut -d' ' -f1,2 /etc/offload/ssh_host_ed25519_key.pub)\" >/root/.ssh/known_hosts
		for i in \$(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
		out=\$(ssh -p $port -o BatchMode=yes -o StrictHostKeyChecking=yes root@127.0.0.1 echo offload-package-ok </dev/null) || { cat /tmp/offload-sshd.log; exit 1; }
		[ \"\$out\" = offload-package-ok ] || { echo \"ssh printed: \$out\"; cat /tmp/offload-sshd.log; exit 1; }
		# a password through PAM (/etc/pam.d/offload-sshd, UsePAM yes), as a
		# throwaway user; the password comes from an askpass program, never argv
		useradd -m -s /bin/sh pamuser
		pw=\$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \\n')
		echo \"pamuser:\$pw\" | chpasswd
		printf '#!/bin/sh\\ncat /root/pamuser.pw\\n' >/root/askpass; chmod 700 /root/askpass
		(umask 077; echo \"\$pw\" >/root/pamuser.pw)
		out=\$(SSH_ASKPASS=/root/askpass SSH_ASKPASS_REQUIRE=force setsid -w ssh -p $port -o PreferredAuthentications=password -o PubkeyAuthentication=no -o StrictHostKeyChecking=yes -o NumberOfPasswordPrompts=1 pamuser@127.0.0.1 'echo \$(id -un)-ok' </dev/null) || { cat /tmp/offload-sshd.log; exit 1; }
		[ \"\$out\" = pamuser-ok ] || { echo \"ssh printed: \$out\"; cat /tmp/offload-sshd.log; exit 1; }
		rm -f /root/pamuser.pw /root/askpass
		# the session's processes end just after the client's exit
		for i in \$(seq 50); do userdel -r pamuser 2>/dev/null && break; sleep 0.1; done
		kill -TERM \$(cat /tmp/offload-sshd.pid)
		wait \$(cat /tmp/offload-sshd.pid) || true"
	say "package: logged in with ssh (host key checked against /etc/offload/ssh_host_ed25519_key.pub), and with a password through /etc/pam.d/offload-sshd; stopped"

	rm -f "$r/etc/offload/sshd_config.d/ci.conf"
	say "package: dpkg -r, then dpkg -P"
	in_chroot "$r" 'set -x
		dpkg -r offload
		test ! -e /usr/bin/offload
		test -f /etc/offload/sshd_config   # a conffile: kept until purge
		dpkg -P offload
		test ! -e /etc/offload
		test ! -e /etc/pam.d/offload-sshd
		test ! -e /var/lib/offload
		test ! -e /var/cache/offload
		if dpkg -s offload >/dev/null 2>&1; then exit 1; fi
		# the sshd account stays (system accounts are not removed; openssh-server shares it)
		getent passwd sshd' 2>&1 | sed 's/^/   /'
}
