package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The contracts a hub publishes, checked by pinned outside validators
// (tools/npm: package.json and package-lock.json pin them exactly; .ci/run
// runs npm ci there): the MCP Inspector CLI's --strict on /mcp's tools, and
// @apidevtools/swagger-parser on /v1/openapi.json.

// npmTools is the directory of the installed validators. Without node, or
// without the install, the test is skipped with a message saying how to
// run it — and fails under CI=true, where .ci/run installs both.
func npmTools(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "tools", "npm"))
	if err != nil {
		t.Fatal(err)
	}
	missing := func(why string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %s (.ci/run installs node and runs npm ci in tools/npm)", why)
		}
		t.Skipf("%s: install node and run `npm ci` in tools/npm to run this test", why)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("no node on PATH")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "package.json")); err != nil {
		missing("the pinned validators are not installed in tools/npm/node_modules")
	}
	return dir
}

// runNode runs node with args in dir and returns its exit code, stdout and stderr.
func runNode(t testing.TB, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("node %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// TestInspectorStrict lists a real hub's tools with the official MCP
// Inspector CLI, pinned, under --strict, over streamable HTTP and through
// the stdio proxy (cks mcp, started by the Inspector as a desktop client
// starts it): it exits 0 and reports no finding at all (no error, no
// warning) about any tool's schemas, and it saw the tools that had
// findings before.
func TestInspectorStrict(t *testing.T) {
	tools := npmTools(t)
	h := startHub(t, "serve")
	launcher := filepath.Join("node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	for _, tc := range []struct {
		name   string
		target []string
	}{
		{"http", []string{h.url + "/mcp", "--header", "Authorization: Bearer " + h.token}},
		{"stdio", []string{"-e", "CKS_TOKEN=" + h.token, cksBin, "mcp", "--url", h.url}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{launcher, "--cli"}, tc.target...), "--method", "tools/list", "--strict")
			r := runNode(t, tools, args...)
			var findings []string
			for line := range strings.Lines(r.stderr) {
				// The proxy logs to stderr too (level=INFO …); the
				// Inspector's findings are "Warning: …"/"Error: …" blocks
				// and a closing count.
				if !strings.HasPrefix(line, "time=") {
					findings = append(findings, line)
				}
			}
			if r.code != 0 || len(findings) != 0 {
				t.Fatalf("mcp-inspector --strict: exit %d, findings:\n%s", r.code, strings.Join(findings, ""))
			}
			var list struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
				t.Fatalf("tools/list answer: %v\n%s", err, r.stdout)
			}
			names := map[string]bool{}
			for _, tl := range list.Tools {
				names[tl.Name] = true
			}
			for _, want := range []string{"agent_status", "create_task", "get_task", "update_task", "claim_tasks", "list_objects"} {
				if !names[want] {
					t.Errorf("the Inspector did not list %s (listed %d tools)", want, len(list.Tools))
				}
			}
		})
	}
}

// TestOpenAPIOutside validates a real hub's /v1/openapi.json as OpenAPI
// 3.1 with the pinned @apidevtools/swagger-parser (tools/npm/validate-openapi.mjs).
func TestOpenAPIOutside(t *testing.T) {
	tools := npmTools(t)
	h := startHub(t, "serve")
	code, body := h.get(t, "/v1/openapi.json")
	if code != 200 {
		t.Fatalf("GET /v1/openapi.json: %d %s", code, body)
	}
	file := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runNode(t, tools, "validate-openapi.mjs", file)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "valid: OpenAPI 3.1") {
		t.Fatalf("validate-openapi.mjs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A document the validator must refuse is refused: the check is live.
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	doc["paths"].(map[string]any)["/v1/broken"] = map[string]any{"get": map[string]any{"responses": map[string]any{"200": map[string]any{}}}}
	bad, _ := json.Marshal(doc)
	if err := os.WriteFile(file, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runNode(t, tools, "validate-openapi.mjs", file); r.code == 0 {
		t.Fatalf("validate-openapi.mjs took a response without a description:\n%s", r.stdout)
	}
}
