"""The benchmark's paramiko client: one transfer on paramiko's default
algorithm choices, timed from the first byte to the last.

test/bench writes this file into its workspace and runs it as
  python3 paramiko_client.py ADDR PORT USER KEY HOSTKEY_PUB OP SRC DST SIZE
with OP one of pipe-upload, pipe-download, sftp-get, sftp-put. It prints
one JSON line: Seconds, Bytes, CipherCS (client to server), CipherSC.
Only the host key and the user key are given; cipher, MAC and key
exchange are paramiko's defaults matched against the server's offer.
"""
import base64
import json
import socket
import sys
import time

import paramiko

CHUNK = 1 << 20


def connect(addr, port, user, key, hostkey_pub):
    sock = socket.create_connection((addr, int(port)), timeout=30)
    t = paramiko.Transport(sock)
    t.start_client(timeout=30)
    with open(hostkey_pub) as f:
        want = base64.b64decode(f.read().split()[1])
    if t.get_remote_server_key().asbytes() != want:
        raise SystemExit("paramiko_client: host key mismatch")
    t.auth_publickey(user, paramiko.Ed25519Key.from_private_key_file(key))
    return t


def open_session(t):
    """A session that sends SHLVL=1, as the harness's OpenSSH clients do:
    bash then skips ~/.bashrc, whose cost is no part of a transfer."""
    ch = t.open_session()
    ch.set_environment_variable("SHLVL", "1")
    return ch


def pipe_upload(t, src, size):
    ch = open_session(t)
    ch.exec_command("wc -c")
    start = time.monotonic()
    with open(src, "rb") as f:
        while True:
            buf = f.read(CHUNK)
            if not buf:
                break
            ch.sendall(buf)
    ch.shutdown_write()
    out = b""
    while True:
        buf = ch.recv(4096)
        if not buf:
            break
        out += buf
    secs = time.monotonic() - start
    got = out.decode().strip()
    if ch.recv_exit_status() != 0 or got != str(size):
        raise SystemExit("paramiko_client: the server received %r bytes, want %d" % (got, size))
    return secs, size


def pipe_download(t, src, size):
    ch = open_session(t)
    start = time.monotonic()
    ch.exec_command("cat " + src)
    n = 0
    while True:
        buf = ch.recv(CHUNK)
        if not buf:
            break
        n += len(buf)
    secs = time.monotonic() - start
    if ch.recv_exit_status() != 0 or n != size:
        raise SystemExit("paramiko_client: pipe download got %d bytes, want %d" % (n, size))
    return secs, n


def sftp_copy(t, op, src, dst):
    sftp = paramiko.SFTPClient.from_transport(t)
    start = time.monotonic()
    if op == "sftp-get":
        sftp.get(src, dst)
    else:
        sftp.put(src, dst)
    secs = time.monotonic() - start
    sftp.close()
    return secs, 0


def main(argv):
    addr, port, user, key, hostkey_pub, op, src, dst, size = argv
    size = int(size)
    t = connect(addr, port, user, key, hostkey_pub)
    if op == "pipe-upload":
        secs, n = pipe_upload(t, src, size)
    elif op == "pipe-download":
        secs, n = pipe_download(t, src, size)
    elif op in ("sftp-get", "sftp-put"):
        secs, n = sftp_copy(t, op, src, dst)
    else:
        raise SystemExit("paramiko_client: unknown op %r" % op)
    print(json.dumps({"Seconds": secs, "Bytes": n,
                      "CipherCS": t.local_cipher, "CipherSC": t.remote_cipher}))
    t.close()


if __name__ == "__main__":
    main(sys.argv[1:])
