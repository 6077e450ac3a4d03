"""asyncssh client for the interop matrix.

usage: asyncssh_client.py HOST PORT USER KEY OP PAYLOAD REMOTE LOCAL REKEY [COMMAND]
OP is exec (prints the command's output), upload (the payload into REMOTE
through "cat") or sftp (put PAYLOAD to REMOTE, get it back to LOCAL).
REKEY=N (bytes, 0 for none) sets rekey_bytes: the client re-keys every N bytes.
"""
import asyncio
import sys
import warnings

warnings.simplefilter("ignore")
import asyncssh  # noqa: E402


async def main():
    host, port, user, key, op, payload, remote, local, rekey = sys.argv[1:10]
    opts = dict(host=host, port=int(port), username=user, client_keys=[key],
                known_hosts=None, agent_path=None, config=[], login_timeout=3600)  # the harness stops a stalled client
    if int(rekey) > 0:
        opts["rekey_bytes"] = int(rekey)
    async with asyncssh.connect(**opts) as conn:
        if op == "exec":
            r = await conn.run(sys.argv[10], check=True)
            sys.stdout.write(r.stdout)
        elif op == "upload":
            async with conn.create_process("cat > " + remote, encoding=None) as p:
                with open(payload, "rb") as f:
                    while True:
                        b = f.read(32768)
                        if not b:
                            break
                        p.stdin.write(b)
                        await p.stdin.drain()
                p.stdin.write_eof()
                r = await p.wait()
                if r.exit_status != 0:
                    raise SystemExit("cat exited with %s" % r.exit_status)
        elif op == "sftp":
            async with conn.start_sftp_client() as s:
                await s.put(payload, remote)
                await s.get(remote, local)
        else:
            raise SystemExit("unknown op " + op)


asyncio.run(main())
