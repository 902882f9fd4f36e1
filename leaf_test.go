package cks_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLeafImportsOnlyTheStandardLibrary: package cks is the leaf every other
// package (and every Go client) may import, so it imports nothing but the
// standard library.
func TestLeafImportsOnlyTheStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); len(got) != 1 || got[0] != "github.com/cks-dev/cks" {
		t.Errorf("package cks depends on %v beyond the standard library; want none", got)
	}
}
