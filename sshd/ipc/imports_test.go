package ipc

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowed are the only packages ipc, the message layer, may import
// besides the standard library: it is messages only. What a message
// means to the processes that send it — auth's requests and decisions,
// provider's samples and AEADs, sandbox's identities, the plan, the
// transport — lives above it, and so do the child-side proxies of the
// monitor's services (sshd/remote) and the process roles; they convert
// to and from ipc's plain structs.
var allowed = []string{
	"golang.org/x/sys/",
	"github.com/offload/offload/sshd/wire",
	"github.com/offload/offload/internal/rawio",
}

func TestIPCImportsOnlyTheAllowList(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sources: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !importAllowed(path) {
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
}

// importAllowed: the standard library (no dot in the first element) and
// the allow-list.
func importAllowed(path string) bool {
	if first, _, _ := strings.Cut(path, "/"); !strings.Contains(first, ".") {
		return true
	}
	for _, ok := range allowed {
		if path == strings.TrimSuffix(ok, "/") || (strings.HasSuffix(ok, "/") && strings.HasPrefix(path, ok)) {
			return true
		}
	}
	return false
}

func TestImportAllowed(t *testing.T) {
	for path, want := range map[string]bool{
		"log/slog": true, "golang.org/x/sys/unix": true, "github.com/offload/offload/sshd/wire": true,
		"github.com/offload/offload/internal/rawio": true, "github.com/offload/offload/sshd/auth": false,
		"github.com/offload/offload/provider": false, "github.com/offload/offload/sshd/wirex": false,
		"golang.org/x/crypto/ssh": false, "github.com/offload/offload/sshd/sandbox": false,
	} {
		if got := importAllowed(path); got != want {
			t.Errorf("importAllowed(%q) = %v, want %v", path, got, want)
		}
	}
}
