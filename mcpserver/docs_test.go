package mcpserver_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cks-dev/cks/ops"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/mcp.md's table of tools from the table")

const (
	toolsStart = "<!-- tools table: generated from package ops by `go test ./mcpserver -run TestDocsListEveryTool -update` -->\n"
	toolsEnd   = "<!-- end of tools table -->\n"
)

// toolsTable is docs/mcp.md's table of tools, from the operations table.
func toolsTable() string {
	var b strings.Builder
	b.WriteString(toolsStart)
	b.WriteString("| tool | needs | hints | what |\n|---|---|---|---|\n")
	for _, op := range ops.All() {
		sp := op.Spec()
		if sp.Surfaces&ops.MCP == 0 {
			continue
		}
		summary := strings.ReplaceAll(sp.Summary, "|", `\|`)
		if sp.Secret {
			summary += " (the only answer with its secret)"
		}
		fmt.Fprintf(&b, "| `%s` | %s on `%s` | %s | %s |\n", sp.Name, sp.Permission, sp.Resource, hints(sp.Hints), summary)
	}
	b.WriteString(toolsEnd)
	return b.String()
}

// hints says a tool's annotations in words.
func hints(h ops.Hints) string {
	var out []string
	if h.ReadOnly {
		out = append(out, "read-only")
	}
	if h.Idempotent {
		out = append(out, "idempotent")
	}
	if d := h.Destructive; d != nil && *d {
		out = append(out, "destructive")
	} else if d != nil {
		out = append(out, "not destructive")
	}
	if w := h.OpenWorld; w != nil && *w {
		out = append(out, "open world")
	} else if w != nil {
		out = append(out, "closed world")
	}
	return strings.Join(out, ", ")
}

// TestDocsListEveryTool: docs/mcp.md lists every tool with the permission
// it needs, its hints and what it does, as the table says.
func TestDocsListEveryTool(t *testing.T) {
	b, err := os.ReadFile("../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, toolsStart), strings.Index(doc, toolsEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/mcp.md has no tools table between %q and %q", toolsStart, toolsEnd)
	}
	want := toolsTable()
	if got := doc[i : j+len(toolsEnd)]; got == want {
		return
	}
	if *updateDocs {
		if err := os.WriteFile("../docs/mcp.md", []byte(doc[:i]+want+doc[j+len(toolsEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/mcp.md's tools table is not the table's; run go test ./mcpserver -run TestDocsListEveryTool -update. Want:\n%s", want)
}
