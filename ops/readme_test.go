package ops_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cks-dev/cks/ops"
)

var updateREADME = flag.Bool("update", false, "rewrite README.md's table of operations from the table")

const (
	tableStart = "<!-- operations table: generated from package ops by `go test ./ops -run TestREADME -update` -->\n"
	tableEnd   = "<!-- end of operations table -->\n"
)

// readmeTable is README's table of operations, from the table.
func readmeTable() string {
	var b strings.Builder
	b.WriteString(tableStart)
	b.WriteString("| operation | route | needs | what | MCP |\n|---|---|---|---|---|\n")
	for _, op := range ops.All() {
		sp := op.Spec()
		mcp := ""
		if sp.Surfaces&ops.MCP != 0 {
			mcp = "tool"
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
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, tableStart), strings.Index(readme, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no operations table between %q and %q", tableStart, tableEnd)
	}
	want := readmeTable()
	got := readme[i : j+len(tableEnd)]
	if got == want {
		return
	}
	if *updateREADME {
		if err := os.WriteFile("../README.md", []byte(readme[:i]+want+readme[j+len(tableEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's operations table is not the table's; run go test ./ops -run TestREADME -update. Want:\n%s", want)
}
