"""paramiko client for the interop matrix.

usage: paramiko_client.py HOST PORT USER KEY OP PAYLOAD REMOTE LOCAL REKEY
OP is exec (prints the command's output), upload (the payload into REMOTE
through "cat") or sftp (put PAYLOAD to REMOTE, get it back to LOCAL).
REKEY=N (bytes, 0 for none) asks for a key re-exchange after every N
bytes of each transfer.
"""
import sys

import paramiko


def load_key(path):
    for cls in (paramiko.Ed25519Key, paramiko.RSAKey, paramiko.ECDSAKey):
        try:
            return cls.from_private_key_file(path)
        except paramiko.SSHException:
            continue
    raise SystemExit("no key type of paramiko reads " + path)


def main():
    host, port, user, key, op, payload, remote, local, rekey = sys.argv[1:10]
    t = paramiko.Transport((host, int(port)))
    # The harness stops a stalled client: no limit of paramiko's own
    # (15 s for the banner and the key exchange by default) may end a slow
    # one on a loaded machine.
    t.banner_timeout = t.handshake_timeout = t.auth_timeout = 3600
    t.start_client(timeout=3600)
    t.auth_publickey(user, load_key(key))
    every = int(rekey)
    next_at = [every]

    def progress(done, _total):
        if every > 0 and done >= next_at[0]:
            next_at[0] = done + every
            t.renegotiate_keys()

    if op == "exec":
        ch = t.open_session()
        ch.exec_command(sys.argv[10])
        out = ch.makefile("rb").read()
        status = ch.recv_exit_status()
        sys.stdout.write(out.decode())
        sys.exit(status)
    elif op == "upload":
        ch = t.open_session()
        ch.exec_command("cat > " + remote)
        with open(payload, "rb") as f:
            sent = 0
            while True:
                b = f.read(32768)
                if not b:
                    break
                ch.sendall(b)
                sent += len(b)
                progress(sent, 0)
        ch.shutdown_write()
        status = ch.recv_exit_status()
        if status != 0:
            raise SystemExit("cat exited with %d" % status)
    elif op == "sftp":
        s = paramiko.SFTPClient.from_transport(t)
        s.put(payload, remote, callback=progress)
        next_at[0] = every
        s.get(remote, local, callback=progress)
        s.close()
    else:
        raise SystemExit("unknown op " + op)
    t.close()


main()
