package transport

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// fixedKeys are the keys fuzz targets decrypt under.
func fixedKeys(cs *cipherSpec, ms *macSpec) directionKeys {
	k := directionKeys{iv: bytes.Repeat([]byte{1}, cs.ivSize), key: bytes.Repeat([]byte{2}, cs.keySize)}
	if ms != nil {
		k.macKey = bytes.Repeat([]byte{3}, ms.keySize)
	}
	return k
}

// FuzzReadPacket decodes hostile bytes under every cipher (chosen by the
// first byte) and the cleartext of the first exchange.
func FuzzReadPacket(f *testing.F) {
	combos := benchCiphers()
	reg := testRegistry(f)
	for i, bc := range combos {
		w, _ := newPacketCipher(reg, bc.cs, bc.ms, fixedKeys(bc.cs, bc.ms))
		var buf bytes.Buffer
		pw := newPacketWriter(&buf, [32]byte{})
		pw.c = w
		pw.write([]byte{94, 1, 2, 3})
		pw.write(bytes.Repeat([]byte{5}, 300))
		f.Add(append([]byte{byte(i)}, buf.Bytes()...))
	}
	f.Add([]byte{0xff, 0, 0, 0, 12, 4, 94, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		r := newPacketReader(bytes.NewReader(in[1:]))
		if i := int(in[0]); i < len(combos) {
			c, err := newPacketCipher(reg, combos[i].cs, combos[i].ms, fixedKeys(combos[i].cs, combos[i].ms))
			if err != nil {
				t.Fatal(err)
			}
			r.c = c
		}
		for j := 0; j < 4; j++ {
			p, err := r.read()
			if err != nil {
				return
			}
			if len(p) == 0 {
				t.Fatal("empty payload returned")
			}
		}
	})
}

// FuzzKexInit parses a hostile KEXINIT and negotiates against the
// server's.
func FuzzKexInit(f *testing.F) {
	srv := fuzzServer(f)
	ours := srv.ourKexInit()
	f.Add(ours.marshal())
	c := *ours
	c.firstKexPacketFollows = true
	c.kex = append([]string{"curve25519-sha256", strictKexClient, extInfoClient}, c.kex...)
	f.Add(c.marshal())
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := parseKexInit(in)
		if err != nil {
			return
		}
		if a, err := negotiate(m, ours); err == nil && (a.kex == nil || a.cipherCS == nil || a.cipherSC == nil) {
			t.Fatal("negotiation succeeded without algorithms")
		}
	})
}

// FuzzKexECDHInit runs the server side of every key exchange on a hostile
// client message: which picks the method and the step (after feeding the
// earlier steps their own seeds, where a method has several).
func FuzzKexECDHInit(f *testing.F) {
	srv := fuzzServer(f)
	f.Add(byte(0), append([]byte{30, 0, 0, 0, 32}, bytes.Repeat([]byte{9}, 32)...))
	f.Add(byte(0), append([]byte{30, 0, 0, 0x04, 0xc0}, make([]byte, 1216)...))
	f.Add(byte(3), append([]byte{30, 0, 0, 0, 65, 4}, make([]byte, 64)...))
	f.Fuzz(func(t *testing.T, which byte, in []byte) {
		spec := &kexTable[int(which)%len(kexTable)]
		k := &kexRun{a: &algorithms{kex: spec, hostKey: "ssh-ed25519"},
			m: handshakeMagics{vC: []byte("SSH-2.0-x"), vS: []byte("SSH-2.0-y")}, signer: srv.signer}
		steps := spec.method.steps
		for i, st := range steps {
			reply, err := st.handle(srv, k, in)
			if err != nil {
				return
			}
			if len(reply) == 0 || (i == len(steps)-1) != (k.res != nil) {
				t.Fatalf("%s step %d: reply %d bytes, result %v", spec.name, i, len(reply), k.res != nil)
			}
		}
	})
}

// FuzzExtInfo parses hostile EXT_INFO messages.
func FuzzExtInfo(f *testing.F) {
	f.Add(fuzzServer(f).extInfoMsg())
	f.Add([]byte{7, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		parseExtInfo(in)
	})
}

// FuzzVersion reads hostile identification lines.
func FuzzVersion(f *testing.F) {
	f.Add([]byte("SSH-2.0-OpenSSH_9.2\r\n"))
	f.Add([]byte("SSH-1.5-old\n"))
	f.Add(bytes.Repeat([]byte("A"), 300))
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := readVersion(bufio.NewReader(bytes.NewReader(in)))
		if err == nil && (len(v) > maxVersionLine || !bytes.HasPrefix(v, []byte("SSH-"))) {
			t.Fatalf("accepted %q", v)
		}
	})
}

// FuzzHandshake plays a hostile client against the whole server
// handshake: it must end with an error or a connection, never a panic or
// a hang.
func FuzzHandshake(f *testing.F) {
	srv := fuzzServer(f)
	ki := srv.ourKexInit()
	ki.kex = append([]string{strictKexClient}, ki.kex...)
	var seed bytes.Buffer
	seed.WriteString("SSH-2.0-fuzz\r\n")
	pw := newPacketWriter(&seed, [32]byte{})
	pw.write(ki.marshal())
	pw.write(append([]byte{30, 0, 0, 0, 32}, bytes.Repeat([]byte{9}, 32)...))
	pw.write([]byte{21})
	f.Add(seed.Bytes())
	f.Add(seed.Bytes()[len("SSH-2.0-fuzz\r\n"):])
	f.Fuzz(func(t *testing.T, in []byte) {
		if !bytes.HasPrefix(in, []byte("SSH-")) {
			in = append([]byte("SSH-2.0-fuzz\r\n"), in...) // spend the effort on packets
		}
		c, err := srv.Handshake(&scriptConn{r: bytes.NewReader(in)})
		if err == nil {
			c.Close()
		}
	})
}

func fuzzServer(f *testing.F) *Server {
	srv, err := NewServer(&Config{Registry: testRegistry(f), HostKeys: allHostKeys(f)[:1], KexAlgorithms: SupportedKex()})
	if err != nil {
		f.Fatal(err)
	}
	return srv
}

// ourKexInit is the KEXINIT a connection of s would send first.
func (s *Server) ourKexInit() *kexInitMsg {
	return &kexInitMsg{
		kex: s.offer.kex, hostKey: s.offer.hostKeys,
		ciphersCS: s.offer.ciphers, ciphersSC: s.offer.ciphers,
		macsCS: s.offer.macs, macsSC: s.offer.macs,
		compCS: []string{compressionNone}, compSC: []string{compressionNone},
	}
}

// scriptConn reads a fixed script and discards writes.
type scriptConn struct{ r io.Reader }

func (c *scriptConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *scriptConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *scriptConn) Close() error                     { return nil }
func (c *scriptConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *scriptConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *scriptConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }
