// Package remote is a child process's side of the services of offload
// sshd's monitor: stand-ins that implement the interfaces the transport
// and the registry expect (provider.AEADProvider, transport.HostKeySigner,
// a metrics sink) by sending sshd/ipc messages to the monitor, and the
// first steps of a child (dropping to its identity, counting its
// providers' work).
//
// sshd/ipc is messages only; this package gives them their meaning on
// the child's side, as sshd/monitor does on the monitor's.
//
// # Host keys
//
// A Signer asks the monitor to sign a connection's exchange hashes (and
// hostkeys-prove signatures): the keys, and a token's PIN, never leave
// the monitor, which checks the key, the hash and the rate itself.
//
// # Bulk crypto on a token
//
// A Provider stands for a provider only the monitor has (a PKCS #11
// token whose module lives in the monitor): each AEAD it builds is held
// by the monitor and each Seal or Open is one request. Its AEADs say how
// many calls the monitor serves at once (provider.ConcurrentAEAD), so the
// transport pipelines packets through the monitor.
//
// # Metrics
//
// Metrics gives a child the sink its registry counts into and a Reporter
// that sends what was counted, as deltas, to the monitor every
// ipc.MetricsInterval and when the child ends.
package remote
