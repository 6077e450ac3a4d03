package connection

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

// echoHandler confirms a channel, answers its requests and echoes its
// data, standing in for sessions so the fuzzer starts no programs.
func echoHandler(c *channel, _ []byte) {
	if c.confirm() != nil {
		return
	}
	go func() {
		for r := range c.reqs {
			c.reply(r, len(r.payload)%2 == 0)
		}
	}()
	buf := make([]byte, 4096)
	io.CopyBuffer(writerOnly{c}, readerOnly{c}, buf)
	c.stderr.Write([]byte("done"))
}

// splitPackets cuts fuzz input into packets, each prefixed by a 2-byte
// length.
func splitPackets(b []byte) [][]byte {
	var ps [][]byte
	for len(b) >= 2 {
		n := int(binary.BigEndian.Uint16(b))
		b = b[2:]
		n = min(n, len(b))
		ps = append(ps, b[:n])
		b = b[n:]
	}
	return ps
}

func joinPackets(ps ...[]byte) []byte {
	var out []byte
	for _, p := range ps {
		out = binary.BigEndian.AppendUint16(out, uint16(len(p)))
		out = append(out, p...)
	}
	return out
}

func seedOpen(kind string, id, window, maxp uint32) []byte {
	b := wire.AppendString([]byte{wire.MsgChannelOpen}, kind)
	return wire.AppendUint32(wire.AppendUint32(wire.AppendUint32(b, id), window), maxp)
}

// FuzzMux feeds a random packet sequence to the multiplexer: it must
// neither panic nor hang, and must end with nil or a ProtocolError.
func FuzzMux(f *testing.F) {
	data := wire.AppendBytes(appendChannelMsg(nil, wire.MsgChannelData, 0), []byte("hello"))
	req := wire.AppendBool(wire.AppendString(appendChannelMsg(nil, wire.MsgChannelRequest, 0), "env"), true)
	f.Add(joinPackets(seedOpen("session", 0, 100, 10), data, req, appendWindowAdjust(nil, 0, 50),
		appendChannelMsg(nil, wire.MsgChannelEOF, 0), appendChannelMsg(nil, wire.MsgChannelClose, 0)))
	f.Add(joinPackets(seedOpen("x", 5, 1<<30, 1<<15), appendWindowAdjust(nil, 0, 0xffffffff)))
	f.Add(joinPackets(wire.AppendBool(wire.AppendString([]byte{wire.MsgGlobalRequest}, "keepalive@openssh.com"), true)))
	f.Add(joinPackets(seedOpen("session", 0, 0, 1), data, data, data))
	gr := func(name string, payload []byte) []byte {
		return append(wire.AppendBool(wire.AppendString([]byte{wire.MsgGlobalRequest}, name), true), payload...)
	}
	f.Add(joinPackets(gr("tcpip-forward", wire.AppendUint32(wire.AppendString(nil, "127.0.0.1"), 0)),
		gr("cancel-tcpip-forward", wire.AppendUint32(wire.AppendString(nil, "127.0.0.1"), 0)),
		gr("streamlocal-forward@openssh.com", []byte{0, 0, 0, 1}), gr("no-more-sessions@openssh.com", nil)))
	f.Add(joinPackets([]byte{wire.MsgChannelOpenConfirm, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0},
		[]byte{wire.MsgChannelOpenFailure, 0, 0, 0, 7}))
	f.Fuzz(func(t *testing.T, in []byte) {
		srv, cli := memPipe()
		done := make(chan error, 1)
		cfg := &Config{WindowSize: 1024, MaxPacket: 1024}
		go func() { done <- serve(context.Background(), srv, &perm.Permissions{User: "fuzz"}, cfg, echoHandler) }()
		go func() { // drain replies
			for {
				if _, err := cli.ReadPacket(); err != nil {
					return
				}
			}
		}()
		for _, p := range splitPackets(in) {
			cli.WritePacket(p)
		}
		cli.Close()
		select {
		case err := <-done:
			var pe *ProtocolError
			if err != nil && !asProtocolError(err, &pe) && !bytes.Contains([]byte(err.Error()), []byte("memconn")) {
				t.Fatalf("Serve: %v", err)
			}
		case <-testenv.Timeout(t):
			t.Fatal("Serve hung")
		}
	})
}

func asProtocolError(err error, pe **ProtocolError) bool {
	e, ok := err.(*ProtocolError)
	*pe = e
	return ok
}

// FuzzParsers runs the session request parsers on arbitrary bytes.
func FuzzParsers(f *testing.F) {
	f.Add(ptyPayload("xterm", 80, 24, []byte{53, 0, 0, 0, 1, 0}), "LC_*")
	f.Add(directPayload("::1", 22), "*a?b*")
	f.Add([]byte("A=1\n#x\nB=2"), "UMASK 022")
	f.Add(x11Payload(true, "MIT-MAGIC-COOKIE-1", "00ff", 0), "*")
	f.Fuzz(func(t *testing.T, b []byte, s string) {
		parseEnvironmentFile(b, []string{s, "!" + s})
		if m, ok := parseLoginDefsUmask(bytes.NewReader(b)); ok && m > 0o777 {
			t.Fatalf("umask %o", m)
		}
		if x, err := parseX11Request(b); err == nil && xauthValid(x.cookie) && bytes.ContainsAny([]byte(x.cookie), " \n") {
			t.Fatalf("cookie %q passed as valid", x.cookie)
		}
		parseDirectStreamLocal(b)
		permitListen([]string{s}, string(b), 22)
		permitOpen([]string{s}, string(b), 22)
		parsePTYRequest(b)
		parseModes(b)
		parseDirectTCPIP(b)
		parseData(append([]byte{wire.MsgChannelExtendedData}, b...))
		passwdShell(b, s)
		if len(b) >= 5 {
			parseChannelRequest(b)
			parseOpen(b)
		}
	})
}
