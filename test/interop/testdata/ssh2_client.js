// node ssh2 client for the interop matrix.
//
// usage: node ssh2_client.js HOST PORT USER KEY OP PAYLOAD REMOTE LOCAL REKEY [COMMAND]
// OP is exec (prints the command's output), upload (the payload into
// REMOTE through "cat") or sftp (put PAYLOAD to REMOTE, get it back to
// LOCAL). REKEY other than 0 calls rekey() once, after 512 KiB of each
// transfer (ssh2 has no re-key threshold).
'use strict';
const fs = require('fs');
const { Client } = require('ssh2');

const [host, port, user, key, op, payload, remote, local, rekey, command] = process.argv.slice(2);
const fail = (err) => { process.stderr.write(String(err && err.stack || err) + '\n'); process.exit(1); };
const conn = new Client();
const done = () => { conn.end(); };
let rekeyed = rekey === '0';
const maybeRekey = (n) => {
  if (!rekeyed && n >= 512 * 1024) {
    rekeyed = true;
    // Client has no public rekey(); its protocol object has (ssh2 1.x).
    conn._protocol.rekey();
  }
};

conn.on('error', fail);
conn.on('ready', () => {
  if (op === 'exec') {
    conn.exec(command, (err, ch) => {
      if (err) return fail(err);
      let out = '';
      ch.on('data', (d) => { out += d; });
      ch.stderr.on('data', (d) => process.stderr.write(d));
      ch.on('exit', (code) => { if (code !== 0) fail('exit status ' + code); });
      ch.on('close', () => { process.stdout.write(out); done(); });
    });
  } else if (op === 'upload') {
    conn.exec('cat > ' + remote, (err, ch) => {
      if (err) return fail(err);
      let sent = 0;
      const rs = fs.createReadStream(payload, { highWaterMark: 32768 });
      rs.on('data', (b) => { sent += b.length; maybeRekey(sent); });
      ch.on('exit', (code) => { if (code !== 0) fail('cat exited with ' + code); });
      ch.on('close', done);
      ch.resume(); // the channel closes only once its output is read
      ch.stderr.on('data', (d) => process.stderr.write(d));
      rs.pipe(ch);
    });
  } else if (op === 'sftp') {
    conn.sftp((err, s) => {
      if (err) return fail(err);
      const step = (n) => maybeRekey(n);
      s.fastPut(payload, remote, { step: (t) => step(t) }, (err) => {
        if (err) return fail(err);
        rekeyed = rekey === '0';
        s.fastGet(remote, local, { step: (t) => step(t) }, (err) => {
          if (err) return fail(err);
          done();
        });
      });
    });
  } else {
    fail('unknown op ' + op);
  }
});
conn.connect({ host, port: Number(port), username: user, privateKey: fs.readFileSync(key), readyTimeout: 3600000 }); // the harness stops a stalled client
