package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoServerDependencies: the Go client links no package of this module
// but the leaf package of wire types (github.com/cks-dev/cks), so a program
// that calls a hub does not build the store, the services, the operations
// table or the surfaces into itself.
func TestNoServerDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const module = "github.com/cks-dev/cks"
	var server []string
	leaf := false
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case pkg == module:
			leaf = true
		case strings.HasPrefix(pkg, module+"/") && pkg != module+"/client":
			server = append(server, pkg)
		}
	}
	if len(server) > 0 || !leaf {
		t.Errorf("client depends on %v (and on the leaf package: %v); want the leaf package only", server, leaf)
	}
}
