// Package pipeline measures and tests one SSH connection whose packet
// cipher runs on PKCS #11 tokens (ProviderMap aes128-gcm=pkcs11): serial,
// one packet at a time on one session, against the transport's pipeline,
// which keeps several packets in flight over several sessions and tokens
// (provider.ConcurrentAEAD, pkcs11.Config.AEADLanes,
// transport.Config.PipelineDepth) — in the server's own process, and in
// a post-auth process that reaches the token through the monitor, one
// request per packet (monitor.AEADServer).
//
// The tokens are throwaway SoftHSM tokens; the PKCS #11 fault injector
// adds a latency to every C_Encrypt and C_Decrypt, as a network HSM or a
// slow unit would. The client is golang.org/x/crypto/ssh; the server is
// the transport with a minimal upper layer (global requests that carry
// the data), so that nothing but the packet path is measured.
//
// # Running
//
//	go test -run '^$' -bench OneConnection -benchtime 3x ./test/pipeline
//	go test -run '^$' -bench Depth -benchtime 3x ./test/pipeline
//
// The tests (go test ./test/pipeline) move a few MiB each way over two
// tokens, in process and through the monitor, and check every byte.
package pipeline
