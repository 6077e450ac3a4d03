package transport

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/software"
)

// flakyKA offers x25519 and ML-KEM-768 first (as a CPU provider) and
// fails to do either.
type flakyKA struct{}

func (flakyKA) Name() string        { return "flaky" }
func (flakyKA) Kind() provider.Kind { return provider.KindCPU }
func (flakyKA) Close() error        { return nil }
func (flakyKA) Capabilities() []provider.Capability {
	return []provider.Capability{{Algorithm: "x25519", Ops: provider.OpDerive | provider.OpGenerate},
		{Algorithm: "ml-kem-768", Ops: provider.OpEncapsulate | provider.OpDecapsulate}}
}
func (flakyKA) Encapsulate(*provider.Algorithm, []byte) ([]byte, []byte, error) {
	return nil, nil, errors.New("flaky: device busy")
}
func (flakyKA) NewDecapsulator(*provider.Algorithm) (provider.Decapsulator, error) {
	return nil, errors.New("flaky: device busy")
}
func (flakyKA) NewKeyAgreement(*provider.Algorithm) (provider.KeyAgreement, error) {
	return nil, errors.New("flaky: device busy")
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestKexProvenanceIsWhatServed: the key exchange's log line names the
// provider that made the key agreement, a fail-open fallback included,
// not the one the plan put first.
func TestKexProvenanceIsWhatServed(t *testing.T) {
	reg := provider.New(provider.Config{})
	for _, p := range []provider.Provider{flakyKA{}, software.New()} {
		if err := reg.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { reg.Close() })
	if ex, err := reg.Explain("x25519"); err != nil || ex.Chosen != "flaky" {
		t.Fatalf("the plan should put flaky first: %v, %v", ex, err)
	}
	for kex, want := range map[string]string{
		"curve25519-sha256":     `kex_provider="x25519 by software (software), fallback from flaky`,
		"mlkem768x25519-sha256": `kex_provider="ml-kem-768 by software (software), fallback from flaky; x25519 by software (software), fallback from flaky; sha256 by software (software)"`,
	} {
		var logs logBuffer
		ts := newTestServer(t, &Config{Registry: reg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		c, _ := ts.dial(t, clientConfig(kex, "", "", ""))
		c.Close()
		var line string
		testenv.WaitUntil(t, func() bool {
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "key exchange done") {
					line = l
				}
			}
			return line != ""
		})
		if !strings.Contains(line, want) {
			t.Errorf("%s: kex_provider does not name the fallbacks that served, want %s in: %s", kex, want, line)
		}
	}
}
