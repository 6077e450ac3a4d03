package transport

import "hash"

// deriveKey computes one key of RFC 4253 §7.2:
// HASH(K || H || letter || session_id), extended by HASH(K || H || K1 ...)
// until n bytes. K is already encoded (mpint, or string for hybrid kex).
func deriveKey(h hash.Hash, k, H []byte, letter byte, sessionID []byte, n int) []byte {
	if n == 0 {
		return nil
	}
	h.Reset()
	h.Write(k)
	h.Write(H)
	h.Write([]byte{letter})
	h.Write(sessionID)
	out := h.Sum(nil)
	for len(out) < n {
		h.Reset()
		h.Write(k)
		h.Write(H)
		h.Write(out)
		out = h.Sum(out)
	}
	return out[:n]
}

// keysFor derives the keys of one direction. Client to server uses the
// letters A (IV), C (key), E (MAC); server to client B, D, F.
func keysFor(h hash.Hash, k, H, sessionID []byte, cs *cipherSpec, ms *macSpec, clientToServer bool) directionKeys {
	iv, key, mac := byte('B'), byte('D'), byte('F')
	if clientToServer {
		iv, key, mac = 'A', 'C', 'E'
	}
	d := directionKeys{
		iv:  deriveKey(h, k, H, iv, sessionID, cs.ivSize),
		key: deriveKey(h, k, H, key, sessionID, cs.keySize),
	}
	if ms != nil {
		d.macKey = deriveKey(h, k, H, mac, sessionID, ms.keySize)
	}
	return d
}
