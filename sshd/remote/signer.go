package remote

import (
	"context"
	"encoding/hex"

	"github.com/offload/offload/sshd/ipc"
)

// Signer is the transport.HostKeySigner of a child: it asks the monitor,
// which holds the host keys, to sign one connection's exchange hashes.
type Signer struct {
	Peer   *ipc.Peer
	ConnID uint64
	// Provenance says where each host key lives (the plan's HostKeyProvenance).
	Provenance map[string]string
	// Busy, when set, is the connection's slot in the worker's BusyTable:
	// idle while the monitor signs.
	Busy *ipc.BusySlot
}

// SignHostKeyProof asks the monitor for a hostkeys-prove-00@openssh.com
// signature (transport.HostKeyProver); the monitor signs over the session
// id it knows, not one given here.
func (s *Signer) SignHostKeyProof(alg string, pub, _ []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ipc.SignTimeout)
	defer cancel()
	s.Busy.Idle()
	defer s.Busy.Busy()
	return s.Peer.Call(ctx, ipc.TypeProve, (&ipc.ProveRequest{ConnID: s.ConnID, Alg: alg, Pub: pub}).Marshal())
}

// HostKeyProvenance says where the monitor's host key pub lives.
func (s *Signer) HostKeyProvenance(pub []byte) string {
	if p, ok := s.Provenance[hex.EncodeToString(pub)]; ok {
		return p + " (in the monitor)"
	}
	return "the monitor"
}

// SignExchange asks the monitor to sign H with the host key pub.
func (s *Signer) SignExchange(alg string, pub, H []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ipc.SignTimeout)
	defer cancel()
	req := &ipc.SignRequest{ConnID: s.ConnID, Alg: alg, Pub: pub, H: H}
	s.Busy.Idle()
	defer s.Busy.Busy()
	return s.Peer.Call(ctx, ipc.TypeSign, req.Marshal())
}
