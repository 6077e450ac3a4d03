package ipc

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// roundTrip checks that every message decodes to what was encoded and
// that every cut of its encoding is refused.
func roundTrip[T any](t *testing.T, name string, m *T, enc func(*T) []byte, dec func([]byte) (*T, error)) {
	t.Helper()
	b := enc(m)
	got, err := dec(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("%s: decoded %+v, want %+v", name, got, m)
	}
	for n := 0; n < len(b); n++ {
		if _, err := dec(b[:n]); err == nil {
			t.Fatalf("%s cut to %d of %d bytes was accepted", name, n, len(b))
		}
	}
	var pe *ProtocolError
	if _, err := dec(append(b, 0)); !errors.As(err, &pe) {
		t.Fatalf("%s with a trailing byte: %v, want a ProtocolError", name, err)
	}
}

func TestMessagesRoundTrip(t *testing.T) {
	roundTrip(t, "NewConn", &NewConn{ConnID: 7, Local: "127.0.0.1:22", Remote: "[::1]:5000"}, (*NewConn).Marshal, ParseNewConn)
	roundTrip(t, "CloseConn", &CloseConn{ConnID: 9, Reason: "grace"}, (*CloseConn).Marshal, ParseCloseConn)
	roundTrip(t, "SignRequest", &SignRequest{ConnID: 1, Alg: "ssh-ed25519", Pub: []byte{1, 2}, H: bytes.Repeat([]byte{3}, 32)}, (*SignRequest).Marshal, ParseSignRequest)
	roundTrip(t, "DecideRequest", &DecideRequest{ConnID: 3, Req: &AuthRequest{User: "alice", Service: "ssh-connection",
		Method: "publickey-hostbound-v00@openssh.com", HasSig: true, Algo: "ssh-ed25519", KeyBlob: []byte{4}, Sig: []byte{5}, Password: "",
		HostKey: []byte{6}}},
		(*DecideRequest).Marshal, ParseDecideRequest)
	roundTrip(t, "HandoffRequest", &HandoffRequest{ConnID: 4, State: []byte{1, 2, 3}}, (*HandoffRequest).Marshal, ParseHandoffRequest)
	roundTrip(t, "ConnDone", &ConnDone{ConnID: 5, Outcome: OutcomeAuthFail, Err: "too many", BytesIn: 10, BytesOut: 20}, (*ConnDone).Marshal, ParseConnDone)
	roundTrip(t, "Adopt", &Adopt{ConnID: 6, Local: "a", Remote: "b", Perms: []byte("{}"), Settings: []byte("{}"), State: []byte{9}, LogLevel: -4},
		(*Adopt).Marshal, ParseAdopt)
	roundTrip(t, "Log", &Log{Level: -4, Msg: "m", Attrs: []LogAttr{{Key: "a", Value: int64(-1)}, {Key: "b", Value: "x"},
		{Key: "c", Value: uint64(1 << 63)}, {Key: "d", Value: 1.5}, {Key: "e", Value: true}, {Key: "f", Value: nil}}}, (*Log).Marshal, ParseLog)
	roundTrip(t, "Log without attributes", &Log{Level: 8, Msg: "m"}, (*Log).Marshal, ParseLog)
}

func TestDecisionRoundTrip(t *testing.T) {
	for _, d := range []*Decision{
		{Verdict: VerdictFailure, Methods: []string{"publickey", "password"}, Partial: true},
		{Verdict: VerdictFailure, Methods: []string{"password"}, InvalidUser: true, Banner: "nologin\n"},
		{Verdict: VerdictKeyOK},
		{Verdict: VerdictDisconnect, Reason: 14, Message: "too many", Cause: "cause"},
		{Verdict: VerdictInfoRequest, Info: &Challenge{Name: "n", Instruction: "i",
			Prompts: []Prompt{{Text: "Password: "}, {Text: "Code: ", Echo: true}}}},
	} {
		roundTrip(t, "Decision", d, (*Decision).Marshal, ParseDecision)
	}
	b := (&Decision{Verdict: VerdictSuccess}).Marshal()
	b[0] = 99
	if _, err := ParseDecision(b); err == nil {
		t.Fatal("an unknown verdict was accepted")
	}
}

// TestBounds: fields beyond their bounds are refused.
func TestBounds(t *testing.T) {
	long := string(bytes.Repeat([]byte{'a'}, maxUser+1))
	if _, err := ParseDecideRequest((&DecideRequest{Req: &AuthRequest{User: long}}).Marshal()); err == nil {
		t.Fatal("an over-long user name was accepted")
	}
	if _, err := ParseSignRequest((&SignRequest{H: make([]byte, maxHash+1)}).Marshal()); err == nil {
		t.Fatal("an over-long hash was accepted")
	}
	if _, err := ParseDecideRequest((&DecideRequest{Req: &AuthRequest{Password: string(make([]byte, maxSecret+1))}}).Marshal()); err == nil {
		t.Fatal("an over-long password was accepted")
	}
	if _, err := ParseConnDone((&ConnDone{Outcome: maxOutcome + 1}).Marshal()); err == nil {
		t.Fatal("an unknown outcome was accepted")
	}
	d := (&Decision{Methods: make([]string, maxList+1)}).Marshal()
	if _, err := ParseDecision(d); err == nil {
		t.Fatal("an over-long method list was accepted")
	}
}

// fuzzParse checks that a parser of bytes from a less privileged process
// never panics and that what it accepts encodes back to the same bytes.
func fuzzParse[T any](f *testing.F, seed *T, enc func(*T) []byte, dec func([]byte) (*T, error)) {
	f.Add(enc(seed))
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) > MaxMessage {
			return // Peer refuses it before any decoder; ChildConfig's and Spawn's Marshal refuse to write it
		}
		m, err := dec(p)
		if err != nil {
			return
		}
		if !bytes.Equal(enc(m), p) {
			t.Fatalf("accepted %x but it encodes as %x", p, enc(m))
		}
	})
}

func FuzzSignRequest(f *testing.F) {
	fuzzParse(f, &SignRequest{ConnID: 1, Alg: "ssh-ed25519", Pub: []byte{1}, H: make([]byte, 32)}, (*SignRequest).Marshal, ParseSignRequest)
}

func FuzzDecideRequest(f *testing.F) {
	fuzzParse(f, &DecideRequest{ConnID: 1, Req: &AuthRequest{User: "u", Method: "password", Password: "p"}}, (*DecideRequest).Marshal, ParseDecideRequest)
}

func FuzzDecision(f *testing.F) {
	f.Add((&Decision{Verdict: VerdictDisconnect, Reason: 2, Message: "m", Cause: "c"}).Marshal())
	fuzzParse(f, &Decision{Verdict: VerdictInfoRequest, Methods: []string{"keyboard-interactive"},
		Info: &Challenge{Name: "n", Prompts: []Prompt{{Text: "p", Echo: true}}}}, (*Decision).Marshal, ParseDecision)
}

func FuzzRespondRequest(f *testing.F) {
	fuzzParse(f, &RespondRequest{ConnID: 1, Responses: []string{"pw", "123456"}}, (*RespondRequest).Marshal, ParseRespondRequest)
}

func FuzzHandoffRequest(f *testing.F) {
	fuzzParse(f, &HandoffRequest{ConnID: 1, State: []byte{1}}, (*HandoffRequest).Marshal, ParseHandoffRequest)
}

func FuzzConnDone(f *testing.F) {
	fuzzParse(f, &ConnDone{ConnID: 1, Outcome: OutcomeGrace, Err: "x"}, (*ConnDone).Marshal, ParseConnDone)
}

func FuzzLog(f *testing.F) {
	f.Add((&Log{Level: -4, Msg: "m", Attrs: []LogAttr{{Key: "conn", Value: int64(7)}, {Key: "s", Value: "x"},
		{Key: "u", Value: uint64(1)}, {Key: "f", Value: 0.5}, {Key: "b", Value: true}, {Key: "n", Value: nil}}}).Marshal())
	fuzzParse(f, &Log{Level: 4, Msg: "m"}, (*Log).Marshal, ParseLog)
}

// FuzzReply: the reply framing any process may receive.
func FuzzReply(f *testing.F) {
	f.Add(encodeReply([]byte("ok"), nil))
	f.Add(encodeReply(nil, errors.New("no")))
	f.Fuzz(func(t *testing.T, p []byte) {
		r := decodeReply(p)
		if r.err == nil && !bytes.Equal(encodeReply(r.payload, nil), p) {
			t.Fatal("a reply does not encode back")
		}
	})
}

func FuzzMetrics(f *testing.F) {
	fuzzParse(f, &Metrics{Samples: []Sample{{Provider: "cpu", Algorithm: "aes128-gcm", Op: "seal", Ops: 1, Bytes: 2}}},
		(*Metrics).Marshal, ParseMetrics)
}

func TestMetricsRoundTrip(t *testing.T) {
	roundTrip(t, "Metrics", &Metrics{Samples: []Sample{{Provider: "cpu", Algorithm: "aes128-gcm", Op: "seal",
		Ops: 3, Bytes: 4096, Errors: 1, Timed: 2, Latency: 5, Buckets: []uint64{1, 0, 1}}}}, (*Metrics).Marshal, ParseMetrics)
}

func TestAEADMessagesRoundTrip(t *testing.T) {
	roundTrip(t, "AEADNew", &AEADNew{Alg: "aes128-gcm", Key: make([]byte, 16)}, (*AEADNew).Marshal, ParseAEADNew)
	roundTrip(t, "AEADHandle", &AEADHandle{Handle: 7}, (*AEADHandle).Marshal, ParseAEADHandle)
	roundTrip(t, "AEADCreated", &AEADCreated{Handle: 7, Lanes: 4, Token: "unit0", Serial: "a1b2", Slot: 3}, (*AEADCreated).Marshal, ParseAEADCreated)
	for _, lanes := range []uint32{0, 65, 1 << 31} {
		if _, err := ParseAEADCreated((&AEADCreated{Handle: 1, Lanes: lanes}).Marshal()); err == nil {
			t.Errorf("AEADCreated with %d lanes accepted", lanes)
		}
	}
	roundTrip(t, "AEADCall", &AEADCall{Handle: 7, Nonce: make([]byte, 12), AD: []byte{0, 0, 0, 9}, Data: []byte("x")},
		(*AEADCall).Marshal, ParseAEADCall)
	if _, err := ParseAEADNew((&AEADNew{Alg: "a", Key: make([]byte, maxKey+1)}).Marshal()); err == nil {
		t.Fatal("an over-long key was accepted")
	}
}

func FuzzAEADNew(f *testing.F) {
	fuzzParse(f, &AEADNew{Alg: "aes128-gcm", Key: make([]byte, 16)}, (*AEADNew).Marshal, ParseAEADNew)
}

func FuzzAEADCall(f *testing.F) {
	fuzzParse(f, &AEADCall{Handle: 1, Nonce: make([]byte, 12), AD: []byte{1}, Data: []byte{2}}, (*AEADCall).Marshal, ParseAEADCall)
}

func FuzzAEADCreated(f *testing.F) {
	fuzzParse(f, &AEADCreated{Handle: 1, Lanes: 4, Token: "t", Slot: 2}, (*AEADCreated).Marshal, ParseAEADCreated)
}

func FuzzAEADHandle(f *testing.F) {
	fuzzParse(f, &AEADHandle{Handle: 1}, (*AEADHandle).Marshal, ParseAEADHandle)
}

func TestLoginRecordRoundTrip(t *testing.T) {
	roundTrip(t, "LoginRecordRequest", &LoginRecordRequest{ConnID: 3, Logout: true, TTY: "/dev/pts/4", PID: 77},
		(*LoginRecordRequest).Marshal, ParseLoginRecordRequest)
	roundTrip(t, "LastLogin", &LastLogin{Unix: 1700000000, Host: "192.0.2.1", TTY: "pts/1"}, (*LastLogin).Marshal, ParseLastLogin)
}

func FuzzLoginRecordRequest(f *testing.F) {
	fuzzParse(f, &LoginRecordRequest{ConnID: 1, TTY: "/dev/pts/0", PID: 5}, (*LoginRecordRequest).Marshal, ParseLoginRecordRequest)
}

func TestProveRoundTrip(t *testing.T) {
	roundTrip(t, "ProveRequest", &ProveRequest{ConnID: 2, Alg: "rsa-sha2-512", Pub: []byte{1, 2}}, (*ProveRequest).Marshal, ParseProveRequest)
}

func FuzzProveRequest(f *testing.F) {
	fuzzParse(f, &ProveRequest{ConnID: 1, Alg: "ssh-ed25519", Pub: []byte{1}}, (*ProveRequest).Marshal, ParseProveRequest)
}

func TestSessionRoundTrip(t *testing.T) {
	roundTrip(t, "PAMSessionOpened", &PAMSessionOpened{Env: []string{"A=1", "B=two"}, Umask: 0o027, Messages: "motd\n"},
		(*PAMSessionOpened).Marshal, ParsePAMSessionOpened)
	roundTrip(t, "PAMSessionOpened", &PAMSessionOpened{Umask: -1}, (*PAMSessionOpened).Marshal, ParsePAMSessionOpened)
	roundTrip(t, "SpawnReply", &SpawnReply{PID: 4242}, (*SpawnReply).Marshal, ParseSpawnReply)
	if _, err := ParsePAMSessionOpened((&PAMSessionOpened{Umask: 0o1777}).Marshal()); err == nil {
		t.Error("umask 01777 accepted")
	}
	if _, err := ParseSpawnReply((&SpawnReply{PID: -1}).Marshal()); err == nil {
		t.Error("pid -1 accepted")
	}
}

func FuzzPAMSessionOpened(f *testing.F) {
	fuzzParse(f, &PAMSessionOpened{Env: []string{"A=1"}, Umask: 0o22, Messages: "m"}, (*PAMSessionOpened).Marshal, ParsePAMSessionOpened)
}

func FuzzSpawnReply(f *testing.F) {
	fuzzParse(f, &SpawnReply{PID: 7}, (*SpawnReply).Marshal, ParseSpawnReply)
}

// TestSecretMessagesOneAllocation: the requests that carry passwords are
// marshalled into a buffer of their final size, so that no outgrown
// buffer with a copy of the password is left behind uncleared.
func TestSecretMessagesOneAllocation(t *testing.T) {
	d := (&DecideRequest{ConnID: 1, Req: &AuthRequest{User: "u", Service: "ssh-connection", Method: "password",
		Password: "a long enough password", KeyBlob: []byte{1, 2}, Sig: []byte{3}, HostKey: []byte{4}}}).Marshal()
	if len(d) != cap(d) {
		t.Errorf("DecideRequest: %d bytes in a buffer of %d", len(d), cap(d))
	}
	r := (&RespondRequest{ConnID: 1, Responses: []string{"one", "two"}}).Marshal()
	if len(r) != cap(r) {
		t.Errorf("RespondRequest: %d bytes in a buffer of %d", len(r), cap(r))
	}
}

// The monitor-to-child messages are fuzzed too: a child trusts its
// monitor, but its decoders are bounded all the same.

func FuzzNewConn(f *testing.F) {
	fuzzParse(f, &NewConn{ConnID: 1, Local: "127.0.0.1:22", Remote: "[::1]:5000"}, (*NewConn).Marshal, ParseNewConn)
}

func FuzzCloseConn(f *testing.F) {
	fuzzParse(f, &CloseConn{ConnID: 1, Reason: "grace"}, (*CloseConn).Marshal, ParseCloseConn)
}

func FuzzAdopt(f *testing.F) {
	fuzzParse(f, &Adopt{ConnID: 1, Local: "a", Remote: "b", Perms: []byte{1}, Settings: []byte{2}, State: []byte{3}, LogLevel: -4},
		(*Adopt).Marshal, ParseAdopt)
}

func FuzzLastLogin(f *testing.F) {
	fuzzParse(f, &LastLogin{Unix: 1700000000, Host: "192.0.2.1", TTY: "pts/1"}, (*LastLogin).Marshal, ParseLastLogin)
}
