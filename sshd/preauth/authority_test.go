package preauth

import (
	"errors"
	"reflect"
	"testing"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/ipc"
)

// TestIPCAgreesWithAuth: ipc numbers verdicts and bounds prompts as auth
// does (it cannot import auth).
func TestIPCAgreesWithAuth(t *testing.T) {
	pairs := map[ipc.Verdict]auth.Verdict{ipc.VerdictFailure: auth.Failure, ipc.VerdictSuccess: auth.Success,
		ipc.VerdictKeyOK: auth.KeyOK, ipc.VerdictDisconnect: auth.Disconnect, ipc.VerdictInfoRequest: auth.InfoRequest}
	for i, a := range pairs {
		if uint8(i) != uint8(a) {
			t.Errorf("ipc verdict %d is auth verdict %d", i, a)
		}
	}
	if ipc.MaxPrompts != auth.MaxPrompts || ipc.MaxResponseLen != auth.MaxResponseLen {
		t.Errorf("ipc bounds %d prompts of %d bytes, auth %d of %d", ipc.MaxPrompts, ipc.MaxResponseLen,
			auth.MaxPrompts, auth.MaxResponseLen)
	}
}

// TestAuthRequestCopiesEveryField: a field added to ipc.AuthRequest
// must be filled from the auth.Request.
func TestAuthRequestCopiesEveryField(t *testing.T) {
	req := &auth.Request{User: "u", Service: "s", Method: "m", Algo: "a", HasSig: true, KeyBlob: []byte{1},
		Sig: []byte{2}, ChangePassword: true, Password: "p", HostKey: []byte{3}}
	v := reflect.ValueOf(*authRequest(req))
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			t.Errorf("ipc.AuthRequest.%s is not copied", v.Type().Field(i).Name)
		}
	}
}

func TestParseDecision(t *testing.T) {
	b := (&ipc.Decision{Verdict: ipc.VerdictInfoRequest, Methods: []string{"password"}, Cause: "why", Banner: "b",
		Info: &ipc.Challenge{Name: "n", Prompts: []ipc.Prompt{{Text: "Code: ", Echo: true}}}}).Marshal()
	d, err := parseDecision(b)
	if err != nil {
		t.Fatal(err)
	}
	want := &auth.Decision{Verdict: auth.InfoRequest, Methods: []string{"password"}, Err: errors.New("why"), Banner: "b",
		Info: &auth.Challenge{Name: "n", Prompts: []auth.Prompt{{Text: "Code: ", Echo: true}}}}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("decoded %+v, want %+v", d, want)
	}
}
