package config

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the keyword table in docs/configuration.md")

const (
	referenceDoc   = "../../docs/configuration.md"
	referenceBegin = "<!-- keyword table: generated from sshd/config/table.go by `go generate ./sshd/config`; do not edit -->\n"
	referenceEnd   = "<!-- end of keyword table -->\n"
)

// referenceTable renders KeywordTable as the Markdown table of
// docs/configuration.md.
func referenceTable() string {
	var b strings.Builder
	counts := map[Status]int{}
	for _, ki := range KeywordTable() {
		counts[ki.Status]++
	}
	fmt.Fprintf(&b, "%d keywords: %d supported, %d refused, %d inert, %d deprecated, %d unsupported.\n\n",
		len(keywords), counts[Supported], counts[Refused], counts[Inert], counts[Deprecated], counts[Unsupported])
	b.WriteString("| keyword | status | in Match | default (`-T`) | what offload does |\n|---|---|---|---|---|\n")
	for _, ki := range KeywordTable() {
		name := ki.Name
		if len(ki.Aliases) > 0 {
			name += " (also " + strings.Join(ki.Aliases, ", ") + ")"
		}
		if ki.Debian {
			name += " (Debian)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, ki.Status, inMatchText(ki), defaultText(ki), doesText(ki))
	}
	return b.String()
}

// TestReferenceTable keeps docs/configuration.md's keyword table equal to
// the code's; go generate (go test -run TestReferenceTable -update)
// rewrites it.
func TestReferenceTable(t *testing.T) {
	b, err := os.ReadFile(referenceDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, referenceBegin), strings.Index(doc, referenceEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no keyword table markers", referenceDoc)
	}
	want := referenceTable()
	got := doc[i+len(referenceBegin) : j]
	if got == want {
		return
	}
	if *update {
		doc = doc[:i+len(referenceBegin)] + want + doc[j:]
		if err := os.WriteFile(referenceDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's keyword table differs from sshd/config/table.go; run go generate ./sshd/config", referenceDoc)
}
