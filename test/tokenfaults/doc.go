// Package tokenfaults tests the SSH server while its PKCS #11 token fails
// under load (issue 7, item 3), in two ways: a real SoftHSM token is
// deleted under a running server and restored (bulk_test.go,
// hostkey_test.go), and chosen PKCS #11 calls are made to fail or answer
// late through pkcs11faults.Injector (inject_test.go, inject_sign_test.go),
// while sessions transfer through `cat` with a sha256 check.
//
// Every case asserts that established sessions either complete with the
// checksum of what was sent or end with an error (never wrong data, never
// a hang: transfers and handshakes run under deadlines), that new
// handshakes succeed through a fallback or are refused with a server log
// line saying why, and that the server recovers by itself, without a
// restart, once the token is back. Each logs a one-line summary (the
// injected ones start with RESULT). Without SoftHSM or cgo the tests skip
// (fail under OFFLOAD_REQUIRE_TOOLS=1).
//
// What happened, from
//
//	go test -count=1 -v ./test/tokenfaults | grep -E 'RESULT|token deleted|primary deleted'
//
// (SoftHSM 2.6.1, 3 sessions of 4-16 MiB; bulk on the token by policy
// prefer-hardware unless said otherwise; 2-core machine, 2026-12):
//
//	fault                                   established sessions                  new handshakes                          after the fault
//	token deleted, bulk on token            3/3 completed, 6 AEAD dirs in Go      completed on the CPU provider (logged)  token reattached, serves again
//	token deleted, bulk pinned              3/3 completed, 6 AEAD dirs in Go      completed on the CPU provider (logged)  token reattached, serves again
//	token deleted, host key, no failover    completed                             refused, log names token, no fallback   same host key after restore, no restart
//	token deleted, host key with failover   completed                             completed, same key, failover logged    primary reattached
//	SESSION_HANDLE_INVALID x3 on bulk       3/3 completed, key re-imported x3,    -                                       -
//	                                        all stayed on the token
//	SESSION_HANDLE_INVALID on bulk, always  2/2 completed, 4 AEAD dirs in Go      completed (its AEADs finish in Go)      new connection on the token
//	DEVICE_REMOVED on every call of slot    3/3 completed, 6 AEAD dirs in Go;     completed on the CPU provider, log:     probe reattaches the token,
//	                                        token marked down                     "offering aes128-gcm unavailable"       new connection on the token
//	DEVICE_REMOVED on signing, host key     completed; one rekeying during the    refused, log names token, no fallback   handshakes succeed, no restart
//	                                        fault disconnected (EOF), no hang
//	DEVICE_REMOVED on primary, failover     completed                             completed in ~35 ms, same host key      primary reattached by the probe
//	latency 50-200 ms on signing (C_SignInit  3/3 completed in ~0.7-1.1 s, none    3 concurrent completed, slowest         -
//	and C_Sign) and on 30 AES-GCM calls     left the token, token stayed up       0.5-0.9 s
package tokenfaults
