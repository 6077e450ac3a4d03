// Package transport is the server side of the SSH transport layer (RFC
// 4253) for offload: version exchange, binary packets, ciphers, key
// exchange and re-exchange. Every primitive comes from a
// provider.Registry, so a PKCS #11 token can carry bulk encryption, key
// agreement or the host-key signature.
//
// # Layers
//
// version.go reads the client's identification line (bounded, no
// pre-banner lines from a client). packet.go frames packets with
// hand-written codecs that do not allocate in steady state; packets up to
// MaxPacket are accepted. cipher_*.go assemble the packet protections
// from registry primitives: aes128/256-gcm@openssh.com from an AEAD,
// chacha20-poly1305@openssh.com from the "chacha20" keystream and
// "poly1305", aes128/256-ctr with hmac-sha2-256/512-etm@openssh.com from a
// stream and a MAC. EtM MACs are checked in constant time before anything
// is decrypted; the older encrypt-and-MAC hmac-sha2-256/512 must decrypt
// first (RFC 4253 §6.4) and check before the payload is used. A bad MAC
// ends the connection with SSH_DISCONNECT_MAC_ERROR.
//
// # Bulk data
//
// The socket is read through a 64 KiB buffer that grows to 256 KiB once
// bulk packets come. Conn.OnReadWait tells the reader when ReadPacket is
// about to wait for the network, so the layer above can batch the work of
// packets that arrived together (the connection layer writes them to a
// program's stdin as one). A *net.TCPConn is read and written with raw
// system calls (internal/rawio), which spares the Go scheduler a thread
// hand-off per packet.
//
// # Pipelining
//
// When a direction's AEAD serves several calls at once
// (provider.ConcurrentAEAD: a token AEAD over several sessions or tokens,
// or one a post-auth process reaches through the monitor), GCM packets
// are pipelined (pipeline.go): each packet's nonce is fixed when it is
// framed, so WritePacket starts its seal and returns while one sender
// writes the sealed packets in order, and the reader frames every packet
// that has come (packet_length is in the clear) and opens several at
// once, reading the socket in the background meanwhile. Results are
// delivered in sequence order, a failure at its place in the sequence; a
// write-side failure closes the connection, so nothing is reordered,
// skipped or sent twice. Packets read ahead under keys that then change
// (the peer's NEWKEYS), or when the connection is exported, are put back
// as unread bytes. Config.PipelineDepth sets the packets in flight (by
// default two per lane the AEAD reports). Software and CPU AEADs are
// never pipelined: their path is one nil check longer.
//
// # Key exchange
//
// kexinit.go negotiates per RFC 4253 §7.1, liberally where the
// specification allows: unknown names in the client's lists never match
// and empty names are skipped (OpenSSH 9.2's sshd reads a list only up to
// its first empty name, so ",a" or "b,,a" has no "a" for it; offload finds
// it). A guessed first kex packet (first_kex_packet_follows) is
// used only when both sides list the same key exchange first and the same
// host-key algorithm first (RFC 4253 §7); otherwise it is dropped, also
// under strict kex. kexrun.go runs an exchange as a table-driven state
// machine fed by the reader: each method (kex.go) is a list of steps, a
// client message and the server's answer, so a method with several
// messages needs only another row. kex.go runs the post-quantum hybrids
// mlkem768x25519-sha256 and sntrup761x25519-sha512 (also under its
// @openssh.com name, which OpenSSH 8.5 to 9.9 prefer), curve25519-sha256
// (and the @libssh.org alias) and, when configured, ecdh-sha2-nistp256/384
// and mlkem768nistp256-sha256. kexdh.go runs finite-field Diffie-Hellman,
// off by default as in OpenSSH 10's server: diffie-hellman-group14-sha256,
// group16-sha512 and group18-sha512 (RFC 8268, the RFC 3526 groups), and
// diffie-hellman-group-exchange-sha256 (RFC 4419), a two-step method whose
// group comes from Config.ModuliFile (moduli.go; /etc/ssh/moduli by
// default) chosen as OpenSSH chooses it. Every KEM, curve and group comes
// from the registry ("ml-kem-768", "sntrup761", "x25519", "ecdh-p256",
// "modp2048", "modp-gex" with provider.Registry.GroupKeyAgreement). Strict key exchange (kex-strict-s-v00@openssh.com)
// is offered in the first KEXINIT: when the client asks for it, sequence
// numbers restart at every NEWKEYS and any other message during the first
// exchange ends the connection. A client that sends ext-info-c gets
// SSH_MSG_EXT_INFO with server-sig-algs as the next packet after the
// server's first NEWKEYS (RFC 8308 §2.4), before the client picks the
// signature algorithm of its user key.
//
// # Host keys
//
// Every host-key signature goes through the connection's HostKeySigner.
// Config.HostCertificates are OpenSSH host certificates of the host keys
// (file or token keys: they are matched by public key), offered first
// with their -cert-v01@openssh.com algorithms; K_S is then the
// certificate and the certified key signs with the plain algorithm.
//
// # Extensions
//
// EXT_INFO announces server-sig-algs, ping@openssh.com and, when
// Config.HostBoundAuth says user authentication verifies them,
// publickey-hostbound@openssh.com (Conn.InitialHostKey is the key such
// requests must name). PING is answered with PONG once
// Conn.SetAuthenticated has been called, and dropped before, as OpenSSH
// does. For UpdateHostKeys the connection layer sends
// Conn.HostKeysAnnouncement (every host key, token keys included) and
// answers hostkeys-prove-00@openssh.com with Conn.ProveHostKeys, whose
// signatures go through the optional HostKeyProver method of the
// connection's HostKeySigner, so a monitor can build the signed data from
// its own record of the session id.
//
// # Compression
//
// With Config.Compression the server offers zlib@openssh.com beside none,
// as OpenSSH's Compression yes: delayed until the server has sent
// USERAUTH_SUCCESS, restarted at each NEWKEYS after that (compress.go).
// Output goes through compress/zlib, flushed per packet; input through
// inflate.go, a decoder that can stop at any bit (OpenSSH's partial
// flushes end packets inside a deflate block) and bounds each packet's
// output to MaxPacket. Export carries the negotiated names; it fails once
// a stream has carried data (its state does not travel).
//
// # Re-exchange
//
// Either side may start a new exchange: the server does after the
// cipher's RFC 4344 byte limit (or Config.RekeyBytes), 2^31 packets or
// Config.RekeyInterval, but never during user authentication (from the
// client's first SERVICE_REQUEST or USERAUTH message until
// USERAUTH_SUCCESS): a re-exchange due then waits for its end, as in
// OpenSSH. After authentication a client's re-exchanges beyond a
// generous allowance (ClientRekeyBurst, one per ClientRekeyBytes moved
// and one per ClientRekeyEvery) are delayed, never refused; the
// server's own are never delayed (rekeypace.go). While one runs, WritePacket queues copies of
// outgoing packets in a bounded queue and blocks when it is full; small
// packets always fit, so a reader that answers (window adjustments) cannot
// deadlock. Nothing but the exchange's own messages is sent between our
// KEXINIT and our NEWKEYS. The peer's connection-layer messages during a
// re-exchange are passed up as OpenSSH's sshd passes them: RFC 4253 §7.1
// forbids them after the peer's KEXINIT, but clients such as asyncssh send
// them. The primitives of every retired key set are released
// (provider.Release): a token AEAD gives back its session.
//
// # Algorithm tables
//
// The algorithms are one table per kind, as data (algorithms.go), with the
// defaults marked in the table. Algorithms exports the rows (kind, name,
// default, registry primitives) for the configuration and explanations,
// so no other package repeats them. The cipher offer is in table order:
// the client's order picks the cipher, so a server's order changes
// nothing. Config.CipherSelection "measured" steers instead: the first
// KEXINIT waits for the client's (at most 250 ms) and lists only the
// ciphers the client accepts that measure within 80% of the fastest of
// them (selection.go), never none; re-exchanges use the client's last list.
//
// # Use
//
// NewServer checks a Config once; Server.Handshake runs the version
// exchange and the first key exchange on a net.Conn and returns a *Conn,
// which implements wire.PacketConn for user authentication and the
// connection protocol.
package transport
