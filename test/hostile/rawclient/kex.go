package rawclient

import (
	"crypto/ecdh"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/wire"
)

// Names announced in the kex list.
const (
	Curve25519    = "curve25519-sha256"
	StrictClient  = "kex-strict-c-v00@openssh.com"
	StrictServer  = "kex-strict-s-v00@openssh.com"
	ExtInfoClient = "ext-info-c"
)

// KexOptions chooses what the client offers. The zero value offers
// curve25519-sha256 with strict kex and ext-info, aes128-gcm@openssh.com
// and the usual host-key algorithms.
type KexOptions struct {
	// NoStrict leaves out kex-strict-c-v00@openssh.com.
	NoStrict bool
	// Cipher is the only cipher offered (default AES128GCM).
	Cipher string
	// MAC is the only MAC offered, used with AES128CTR (default HMACETM).
	MAC string
	// HostKeyAlgorithms default to ed25519, ECDSA and RSA-SHA2.
	HostKeyAlgorithms []string
	// NoSeqReset announces strict kex but keeps counting the sequence
	// numbers of what it sends across NEWKEYS, as a client that does not
	// implement it would (it still reads correctly).
	NoSeqReset bool
}

func (o *KexOptions) cipher() string {
	if o == nil || o.Cipher == "" {
		return AES128GCM
	}
	return o.Cipher
}

func (o *KexOptions) mac() string {
	if o == nil || o.MAC == "" {
		return HMACETM
	}
	return o.MAC
}

// KexInit is a decoded KEXINIT.
type KexInit struct {
	Kex, HostKey, CiphersCS, CiphersSC, MACsCS, MACsSC []string
	CompCS, CompSC, LangCS, LangSC                     []string
	FirstKexFollows                                    bool
}

// ParseKexInit decodes a KEXINIT payload.
func ParseKexInit(p []byte) (*KexInit, error) {
	r := wire.NewReader(p)
	if r.Byte("message") != wire.MsgKexInit {
		return nil, errors.New("rawclient: not a KEXINIT")
	}
	r.Fixed("cookie", 16)
	k := &KexInit{}
	for _, l := range []*[]string{&k.Kex, &k.HostKey, &k.CiphersCS, &k.CiphersSC, &k.MACsCS, &k.MACsSC,
		&k.CompCS, &k.CompSC, &k.LangCS, &k.LangSC} {
		*l = r.NameList("list")
	}
	k.FirstKexFollows = r.Bool("first_kex_packet_follows")
	r.Uint32("reserved")
	return k, r.Done()
}

// kexState is one key exchange in progress.
type kexState struct {
	opts    KexOptions
	iC, iS  []byte
	priv    *ecdh.PrivateKey
	cipher  string
	pending [2]packetCipher // write, read
}

// KexInitPayload returns the KEXINIT the client would send for o; the
// first exchange announces strict kex and ext-info unless o says not to.
func (c *Conn) KexInitPayload(o *KexOptions) []byte {
	kex := []string{Curve25519}
	if c.KexCount == 0 {
		kex = append(kex, ExtInfoClient)
		if o == nil || !o.NoStrict {
			kex = append(kex, StrictClient)
		}
	}
	hk := []string{"ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "rsa-sha2-512", "rsa-sha2-256"}
	if o != nil && o.HostKeyAlgorithms != nil {
		hk = o.HostKeyAlgorithms
	}
	cs := []string{o.cipher()}
	macs := []string{o.mac()}
	none := []string{"none"}
	p := []byte{wire.MsgKexInit}
	var cookie [16]byte
	rand.Read(cookie[:])
	p = append(p, cookie[:]...)
	for _, l := range [][]string{kex, hk, cs, cs, macs, macs, none, none, nil, nil} {
		p = wire.AppendNameList(p, l)
	}
	p = wire.AppendBool(p, false)
	return wire.AppendUint32(p, 0)
}

// SendKexInit starts a key exchange from the client side.
func (c *Conn) SendKexInit(o *KexOptions) error {
	if o == nil {
		o = &KexOptions{}
	}
	c.kex = &kexState{opts: *o, iC: c.KexInitPayload(o), cipher: o.cipher()}
	return c.WritePacket(c.kex.iC)
}

// ReadKexInit reads messages until the server's KEXINIT and returns the
// messages it skipped on the way (channel data during a rekey, say).
func (c *Conn) ReadKexInit() (skipped [][]byte, err error) {
	for {
		p, err := c.Next()
		if err != nil {
			return skipped, err
		}
		if p[0] == wire.MsgKexInit {
			c.ServerKexInit = p
			if c.kex != nil {
				c.kex.iS = p
			}
			return skipped, nil
		}
		skipped = append(skipped, p)
	}
}

// SendECDHInit sends the client's curve25519 public value.
func (c *Conn) SendECDHInit() error {
	if c.kex == nil {
		return errors.New("rawclient: SendECDHInit before SendKexInit")
	}
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	c.kex.priv = priv
	return c.WritePacket(wire.AppendBytes([]byte{wire.MsgKexECDHInit}, priv.PublicKey().Bytes()))
}

// ReadECDHReply reads the server's reply, checks the host-key signature
// and derives the new keys (installed by SendNewKeys and ReadNewKeys).
func (c *Conn) ReadECDHReply() error {
	p, err := c.Next()
	if err != nil {
		return err
	}
	if p[0] != wire.MsgKexECDHReply {
		return fmt.Errorf("rawclient: got message %d, want KEX_ECDH_REPLY", p[0])
	}
	r := wire.NewReader(p[1:])
	kS, qS, sigBlob := r.Bytes("K_S"), r.Bytes("Q_S"), r.Bytes("signature")
	if err := r.Done(); err != nil {
		return err
	}
	return c.finishExchange(kS, qS, sigBlob)
}

func (c *Conn) finishExchange(kS, qS, sigBlob []byte) error {
	k := c.kex
	peer, err := ecdh.X25519().NewPublicKey(qS)
	if err != nil {
		return err
	}
	secret, err := k.priv.ECDH(peer)
	if err != nil {
		return err
	}
	K := wire.AppendMPInt(nil, secret)
	var b []byte
	for _, v := range [][]byte{[]byte(c.ClientVersion), []byte(c.ServerVersion), k.iC, k.iS, kS, k.priv.PublicKey().Bytes(), qS} {
		b = wire.AppendBytes(b, v)
	}
	sum := sha256.Sum256(append(b, K...))
	H := sum[:]
	if err := verifyHostKey(kS, sigBlob, H); err != nil {
		return err
	}
	if c.SessionID == nil {
		c.SessionID = H
		if si, err := ParseKexInit(k.iS); err == nil {
			c.Strict = !k.opts.NoStrict && slices.Contains(si.Kex, StrictServer)
		}
	}
	return c.deriveCiphers(K, H)
}

func verifyHostKey(kS, sigBlob, H []byte) error {
	pub, err := ssh.ParsePublicKey(kS)
	if err != nil {
		return fmt.Errorf("rawclient: host key: %w", err)
	}
	r := wire.NewReader(sigBlob)
	sig := &ssh.Signature{Format: r.String("format"), Blob: r.Bytes("blob")}
	if err := r.Done(); err != nil {
		return fmt.Errorf("rawclient: signature: %w", err)
	}
	if err := pub.Verify(H, sig); err != nil {
		return fmt.Errorf("rawclient: host key signature: %w", err)
	}
	return nil
}

func (c *Conn) deriveCiphers(K, H []byte) error {
	ivN, keyN, macN, err := sizes(c.kex.cipher)
	if err != nil {
		return err
	}
	derive := func(letter byte, n int) []byte { return deriveKey(K, H, letter, c.SessionID, n) }
	cs := keyMaterial{iv: derive('A', ivN), key: derive('C', keyN), mac: derive('E', macN)}
	sc := keyMaterial{iv: derive('B', ivN), key: derive('D', keyN), mac: derive('F', macN)}
	mac := c.kex.opts.mac()
	w, err := newCipher(c.kex.cipher, mac, cs)
	if err != nil {
		return err
	}
	rd, err := newCipher(c.kex.cipher, mac, sc)
	if err != nil {
		return err
	}
	c.kex.pending = [2]packetCipher{w, rd}
	return nil
}

// deriveKey is RFC 4253 §7.2 with SHA-256.
func deriveKey(K, H []byte, letter byte, sessionID []byte, n int) []byte {
	if n == 0 {
		return nil
	}
	h := sha256.New()
	h.Write(K)
	h.Write(H)
	h.Write([]byte{letter})
	h.Write(sessionID)
	out := h.Sum(nil)
	for len(out) < n {
		h.Reset()
		h.Write(K)
		h.Write(H)
		h.Write(out)
		out = h.Sum(out)
	}
	return out[:n]
}

// SendNewKeys sends NEWKEYS and switches the write direction.
func (c *Conn) SendNewKeys() error {
	if c.kex == nil || c.kex.pending[0] == nil {
		return errors.New("rawclient: SendNewKeys before the exchange")
	}
	if err := c.WritePacket([]byte{wire.MsgNewKeys}); err != nil {
		return err
	}
	c.w = c.kex.pending[0]
	if c.Strict && !c.kex.opts.NoSeqReset {
		c.wseq = 0
	}
	return nil
}

// ReadNewKeys reads the server's NEWKEYS; ReadPacket switches the read
// direction when it sees one.
func (c *Conn) ReadNewKeys() error {
	_, err := c.Expect(wire.MsgNewKeys)
	return err
}

// switchRead installs the pending read keys after the server's NEWKEYS.
func (c *Conn) switchRead() {
	if c.kex == nil || c.kex.pending[1] == nil {
		return
	}
	c.r = c.kex.pending[1]
	if c.Strict {
		c.rseq = 0
	}
	c.KexCount++
	c.kex = nil
}

// Handshake exchanges versions (DefaultVersion) and runs the first key
// exchange.
func (c *Conn) Handshake(o *KexOptions) error {
	if err := c.ExchangeVersions(DefaultVersion); err != nil {
		return err
	}
	return c.Rekey(o)
}

// AnswerKex completes a key exchange the server started with the
// KEXINIT payload serverInit (read by the caller through Next).
func (c *Conn) AnswerKex(serverInit []byte, o *KexOptions) error {
	c.ServerKexInit = serverInit
	if err := c.SendKexInit(o); err != nil {
		return err
	}
	c.kex.iS = serverInit
	if err := c.SendECDHInit(); err != nil {
		return err
	}
	if err := c.ReadECDHReply(); err != nil {
		return err
	}
	if err := c.SendNewKeys(); err != nil {
		return err
	}
	return c.ReadNewKeys()
}

// Rekey runs one complete key exchange started by the client.
func (c *Conn) Rekey(o *KexOptions) error {
	if err := c.SendKexInit(o); err != nil {
		return err
	}
	if _, err := c.ReadKexInit(); err != nil {
		return err
	}
	if err := c.SendECDHInit(); err != nil {
		return err
	}
	if err := c.ReadECDHReply(); err != nil {
		return err
	}
	if err := c.SendNewKeys(); err != nil {
		return err
	}
	return c.ReadNewKeys()
}

// SetServerKexInit records the server's KEXINIT (read through Next) for
// the exchange SendKexInit started, so a test can run the steps of a
// server-started exchange one by one.
func (c *Conn) SetServerKexInit(p []byte) {
	c.ServerKexInit = p
	if c.kex != nil {
		c.kex.iS = p
	}
}
