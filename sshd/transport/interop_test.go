package transport

import (
	"slices"
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestXCryptoClientMatrix(t *testing.T) {
	ts := newTestServer(t, &Config{KexAlgorithms: SupportedKex(), MACs: SupportedMACs(), Ciphers: SupportedCiphers(),
		HostKeyAlgorithms: SupportedHostKeyAlgorithms()})
	type combo struct{ cipher, mac string }
	var combos []combo
	for _, cm := range clientCombos() {
		combos = append(combos, combo{cm[0], cm[1]})
	}
	xkex := append(ssh.SupportedAlgorithms().KeyExchanges, ssh.InsecureAlgorithms().KeyExchanges...)
	for _, kex := range SupportedKex() {
		if !slices.Contains(xkex, kex) {
			continue // sntrup761 and mlkem768nistp256: OpenSSH and rawclient tests cover them
		}
		hks, cms := SupportedHostKeyAlgorithms(), combos
		if findKex(kex).method != ecdhMethod && !longTest() {
			hks, cms = hks[:1], cms[:1] // finite-field DH is slow; the other columns are the same code
		}
		for _, hk := range hks {
			for _, cm := range cms {
				name := kex + "/" + hk + "/" + cm.cipher + "/" + cm.mac
				t.Run(name, func(t *testing.T) {
					cl, _ := ts.dial(t, clientConfig(kex, cm.cipher, cm.mac, hk))
					ok, reply, err := cl.SendRequest("echo", true, []byte("hello"))
					if err != nil || !ok || string(reply) != "hello" {
						t.Fatalf("echo: ok=%v reply=%q err=%v", ok, reply, err)
					}
				})
			}
		}
	}
}
