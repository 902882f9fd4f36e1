package ops_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/ops"
)

var updateREADME = flag.Bool("update", false, "rewrite README.md's table of operations and docs/mcp.md's of tools from the table")

const (
	tableStart = "<!-- operations table: generated from package ops by `go test ./internal/ops -run TestREADME -update` -->\n"
	tableEnd   = "<!-- end of operations table -->\n"
)

// readmeTable is README's table of operations, from the table.
func readmeTable() string {
	var b strings.Builder
	b.WriteString(tableStart)
	b.WriteString("| operation | route | needs | what | MCP (hints) |\n|---|---|---|---|---|\n")
	for _, op := range ops.All() {
		sp := op.Spec()
		mcp := ""
		if sp.Surfaces&ops.MCP != 0 {
			mcp = "tool: " + hintWords(sp.Hints) // every tool with its hints, as docs/mcp.md lists them
		}
		summary := strings.ReplaceAll(sp.Summary, "|", `\|`)
		if sp.Secret {
			summary += " (the only answer with its secret)"
		}
		fmt.Fprintf(&b, "| `%s` | `%s %s` | %s on `%s` | %s | %s |\n", sp.Name, sp.Method, sp.Path, sp.Permission, sp.Resource, summary, mcp)
	}
	b.WriteString(tableEnd)
	return b.String()
}

// TestREADMEListsEveryOperation: README's HTTP API section holds the table
// of operations as the table says it (name, route, permission and resource,
// summary, MCP tool), so the documented API is the served one.
func TestREADMEListsEveryOperation(t *testing.T) {
	generated(t, "../../README.md", tableStart, tableEnd, readmeTable(), "go test ./internal/ops -run TestREADME -update")
}

const (
	toolsStart = "<!-- tools table: generated from package ops by `go test ./internal/ops -run TestDocsMCP -update` -->\n"
	toolsEnd   = "<!-- end of tools table -->\n"
)

// toolsTable is docs/mcp.md's table of the MCP tools, from the table.
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
		fmt.Fprintf(&b, "| `%s` | %s on `%s` | %s | %s |\n", sp.Name, sp.Permission, sp.Resource, hintWords(sp.Hints), summary)
	}
	b.WriteString(toolsEnd)
	return b.String()
}

// hintWords says a tool's annotations in words.
func hintWords(h ops.Hints) string {
	var out []string
	if h.ReadOnly {
		out = append(out, "read-only")
	}
	if h.Idempotent {
		out = append(out, "idempotent")
	}
	switch d := h.Destructive; {
	case d != nil && *d:
		out = append(out, "destructive")
	case d != nil:
		out = append(out, "not destructive")
	}
	switch w := h.OpenWorld; {
	case w != nil && *w:
		out = append(out, "open world")
	case w != nil:
		out = append(out, "closed world")
	}
	return strings.Join(out, ", ")
}

// TestDocsMCPListsEveryTool: docs/mcp.md lists every MCP tool with the
// permission it needs, its hints and what it does, as the table says.
func TestDocsMCPListsEveryTool(t *testing.T) {
	generated(t, "../../docs/mcp.md", toolsStart, toolsEnd, toolsTable(), "go test ./internal/ops -run TestDocsMCP -update")
}

// generated checks that file holds want between the lines start and end
// (want includes them), rewriting it with -update; otherwise the error says
// to run regenerate.
func generated(t *testing.T, file, start, end, want, regenerate string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, start), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated table between %q and %q", file, start, end)
	}
	if doc[i:j+len(end)] == want {
		return
	}
	if *updateREADME {
		if err := os.WriteFile(file, []byte(doc[:i]+want+doc[j+len(end):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's generated table is not the table's; run %s. Want:\n%s", file, regenerate, want)
}
