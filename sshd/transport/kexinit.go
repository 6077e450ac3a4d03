package transport

import (
	"slices"
	"strings"

	"github.com/offload/offload/sshd/wire"
)

// kexInitMsg is SSH_MSG_KEXINIT (RFC 4253 §7.1).
type kexInitMsg struct {
	cookie                [16]byte
	kex, hostKey          []string
	ciphersCS, ciphersSC  []string
	macsCS, macsSC        []string
	compCS, compSC        []string
	langCS, langSC        []string
	firstKexPacketFollows bool
	reserved              uint32
}

// parseKexInit decodes a KEXINIT payload (message number included).
func parseKexInit(p []byte) (*kexInitMsg, error) {
	r := wire.NewReader(p)
	m := &kexInitMsg{}
	if r.Byte("message") != wire.MsgKexInit {
		return nil, protocolError("not a KEXINIT")
	}
	copy(m.cookie[:], r.Fixed("cookie", 16))
	for _, f := range m.lists() {
		*f.v = peerNameList(r, f.name)
	}
	m.firstKexPacketFollows = r.Bool("first_kex_packet_follows")
	m.reserved = r.Uint32("reserved")
	if err := r.Done(); err != nil {
		return nil, &DisconnectError{Reason: wire.DisconnectProtocolError, Message: "malformed KEXINIT", Err: err}
	}
	return m, nil
}

// peerNameList reads a name-list from the peer: empty names (",a",
// "a,,b", "a,") are skipped, not refused (OpenSSH 9.2 stops at the first
// empty name instead, which loses the names after it); unknown names
// simply never match.
func peerNameList(r *wire.Reader, field string) []string {
	b := r.Bytes(field)
	if len(b) == 0 {
		return nil
	}
	names := strings.Split(string(b), ",")
	return slices.DeleteFunc(names, func(n string) bool { return n == "" })
}

type namedList struct {
	name string
	v    *[]string
}

func (m *kexInitMsg) lists() []namedList {
	return []namedList{
		{"kex_algorithms", &m.kex}, {"server_host_key_algorithms", &m.hostKey},
		{"encryption_algorithms_client_to_server", &m.ciphersCS}, {"encryption_algorithms_server_to_client", &m.ciphersSC},
		{"mac_algorithms_client_to_server", &m.macsCS}, {"mac_algorithms_server_to_client", &m.macsSC},
		{"compression_algorithms_client_to_server", &m.compCS}, {"compression_algorithms_server_to_client", &m.compSC},
		{"languages_client_to_server", &m.langCS}, {"languages_server_to_client", &m.langSC},
	}
}

// marshal encodes the message with its message number.
func (m *kexInitMsg) marshal() []byte {
	b := []byte{wire.MsgKexInit}
	b = append(b, m.cookie[:]...)
	for _, f := range m.lists() {
		b = wire.AppendNameList(b, *f.v)
	}
	b = wire.AppendBool(b, m.firstKexPacketFollows)
	return wire.AppendUint32(b, 0)
}

// algorithms is the outcome of a negotiation.
type algorithms struct {
	kex                *kexSpec
	hostKey            string
	cipherCS, cipherSC *cipherSpec
	macCS, macSC       *macSpec // nil for ciphers with a built-in MAC
	compCS, compSC     string
	// guessWrong: the client sent a guessed kex packet that must be ignored.
	guessWrong bool
}

// choose returns the first name in client that server also lists
// (RFC 4253 §7.1).
func choose(client, server []string) (string, bool) {
	for _, c := range client {
		if slices.Contains(server, c) {
			return c, true
		}
	}
	return "", false
}

// negotiate picks the algorithms for a key exchange; server lists only
// host-key algorithms backed by a configured key.
func negotiate(client, server *kexInitMsg) (*algorithms, error) {
	a := &algorithms{}
	name, ok := choose(client.kex, server.kex)
	if a.kex = findKex(name); !ok || a.kex == nil {
		return nil, kexError(nil, "no common key exchange algorithm")
	}
	if a.hostKey, ok = choose(client.hostKey, server.hostKey); !ok {
		return nil, kexError(nil, "no common host key algorithm")
	}
	var err error
	if a.cipherCS, a.macCS, err = negotiateCipher(client.ciphersCS, server.ciphersCS, client.macsCS, server.macsCS); err != nil {
		return nil, err
	}
	if a.cipherSC, a.macSC, err = negotiateCipher(client.ciphersSC, server.ciphersSC, client.macsSC, server.macsSC); err != nil {
		return nil, err
	}
	if a.compCS, ok = choose(client.compCS, server.compCS); !ok {
		return nil, kexError(nil, "no common compression algorithm")
	}
	if a.compSC, ok = choose(client.compSC, server.compSC); !ok {
		return nil, kexError(nil, "no common compression algorithm")
	}
	a.guessWrong = client.firstKexPacketFollows && !guessRight(client, server)
	return a, nil
}

// guessRight reports whether a client's guessed first kex packet may be
// used: RFC 4253 §7 calls the guess right only when both sides list the
// same key exchange first and the same host-key algorithm first.
func guessRight(client, server *kexInitMsg) bool {
	first := func(l []string) string {
		if len(l) == 0 {
			return ""
		}
		return l[0]
	}
	return first(client.kex) != "" && first(client.kex) == first(server.kex) &&
		first(client.hostKey) == first(server.hostKey)
}

func negotiateCipher(cc, sc, cm, sm []string) (*cipherSpec, *macSpec, error) {
	name, ok := choose(cc, sc)
	cs := findCipher(name)
	if !ok || cs == nil {
		return nil, nil, kexError(nil, "no common cipher")
	}
	if cs.macBuiltIn {
		return cs, nil, nil
	}
	name, ok = choose(cm, sm)
	ms := findMAC(name)
	if !ok || ms == nil {
		return nil, nil, kexError(nil, "no common MAC")
	}
	return cs, ms, nil
}
