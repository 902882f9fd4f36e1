package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/service/auth"
)

// The contracts a hub publishes, checked by pinned outside validators
// (tools/npm: package.json and package-lock.json pin them exactly; .ci/run
// runs npm ci there): the MCP Inspector CLI's --strict on /mcp's tools,
// @apidevtools/swagger-parser on /v1/openapi.json, and the linters redocly
// and spectral on it (tools/npm/redocly.yaml, tools/npm/.spectral.yaml);
// and /mcp's sessions as the official TypeScript SDK
// (@modelcontextprotocol/sdk) uses them.

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
	for _, script := range []string{"@modelcontextprotocol/inspector/package.json", "@modelcontextprotocol/sdk/package.json", redocly, spectral} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", script)); err != nil {
			missing("the pinned validators and SDK are not installed in tools/npm/node_modules (no " + script + ")")
		}
	}
	return dir
}

// The linters' scripts under tools/npm/node_modules.
const (
	redocly  = "@redocly/cli/bin/cli.js"
	spectral = "@stoplight/spectral-cli/dist/index.js"
)

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

// TestTypeScriptSessionLoop (issue 37, finding 1): the official TypeScript
// SDK's connect, call, close — whose close does not DELETE its session —
// in a loop of three times the hub's session cap, by a read-only token:
// every round succeeds, the hub holds at most the token's cap of sessions
// afterwards (cks_mcp_sessions), and another token's session opens and
// calls as before.
func TestTypeScriptSessionLoop(t *testing.T) {
	tools := npmTools(t)
	h := startHubEnv(t, "serve", []string{"CKS_MCP_MAX_SESSIONS=10", "CKS_MCP_MAX_SESSIONS_PER_TOKEN=3"})
	loop := newToken(t, h, "loop", cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermRead})
	r := runNode(t, tools, "mcp-session-loop.mjs", h.url+"/mcp", loop, "30")
	if r.code != 0 || !strings.Contains(r.stdout, `{"rounds":30}`) {
		t.Fatalf("the loop: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	code, metrics := h.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	var open float64 = -1
	for line := range strings.Lines(metrics) {
		if v, ok := strings.CutPrefix(line, "cks_mcp_sessions "); ok {
			fmt.Sscan(v, &open)
		}
	}
	if open < 0 || open > 3 {
		t.Fatalf("cks_mcp_sessions after the loop: %v, want at most the token's 3", open)
	}
	admin := connectMCP(t, &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{h.token}}})
	useTool(t, admin, "list_tasks", nil, nil)
}

// TestTypeScriptLongStop (issue 37, finding 6): a stop_task that waits for
// its executor longer than the TypeScript SDK client's request timeout
// works: the hub's progress notifications reset the timeout
// (resetTimeoutOnProgress). The timeout here is 5 s and the progress
// interval 250 ms (CKS_MCP_PROGRESS_INTERVAL), standing for the SDK's
// default 60 s and a 75 s wait: the executor confirms the abort only once
// the call has waited twice the timeout.
func TestTypeScriptLongStop(t *testing.T) {
	tools := npmTools(t)
	const timeout = 5 * time.Second
	h := startHubEnv(t, "serve", []string{"CKS_MCP_PROGRESS_INTERVAL=250ms"})
	op := client.New(h.url, h.token)
	ctx := context.Background()
	if _, _, err := op.CreateTask(ctx, cks.NewTask{Type: "long-stop", Title: "slow to stop"}); err != nil {
		t.Fatal(err)
	}
	claimed, err := op.Claim(ctx, "slow-worker", []string{"long-stop"}, 1, time.Hour)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, "node", "mcp-long-stop.mjs", h.url+"/mcp", h.token, fmt.Sprint(claimed[0].ID),
		fmt.Sprint(timeout.Milliseconds()))
	cmd.Dir = tools
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var last struct {
		Progress int    `json:"progress"`
		WaitedMS int64  `json:"waited_ms"`
		Error    string `json:"error"`
		Result   *struct {
			Abort struct {
				Outcome string `json:"outcome"`
			} `json:"abort"`
		} `json:"result"`
	}
	confirmed := false
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		last.Result = nil
		if err := json.Unmarshal(lines.Bytes(), &last); err != nil {
			t.Fatalf("mcp-long-stop.mjs said %q", lines.Text())
		}
		if !confirmed && last.Result == nil && last.WaitedMS > 2*timeout.Milliseconds() {
			if _, err := op.ConfirmAbort(ctx, claimed[0].ID, claimed[0].LeaseToken); err != nil {
				t.Fatal(err)
			}
			confirmed = true
		}
	}
	if err := cmd.Wait(); err != nil || !confirmed || last.Result == nil || last.Result.Abort.Outcome != "abort_confirmed" {
		t.Fatalf("the long stop: %v, confirmed %v, last line %+v\n%s", err, confirmed, last, stderr.String())
	}
	if last.WaitedMS <= 2*timeout.Milliseconds() || last.Progress == 0 {
		t.Fatalf("the stop answered after %d ms with %d progress notifications: want longer than twice the %s timeout",
			last.WaitedMS, last.Progress, timeout)
	}
}

// lintFindings lints the OpenAPI document file with redocly (its
// recommended rules, tools/npm/redocly.yaml) and spectral (spectral:oas,
// tools/npm/.spectral.yaml) and returns every finding of either, errors and
// warnings alike, one line each.
func lintFindings(t *testing.T, tools, file string) []string {
	t.Helper()
	var out []string
	r := runNode(t, tools, filepath.Join("node_modules", redocly), "lint", file, "--config", "redocly.yaml", "--format=json")
	var rep struct {
		Totals   struct{ Errors, Warnings int }
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("redocly lint: exit %d, not a JSON report (%v):\n%.2000s%.2000s", r.code, err, r.stdout, r.stderr)
	}
	for _, p := range rep.Problems {
		out = append(out, "redocly "+p.Severity+" "+p.RuleID+": "+p.Message)
	}
	if len(out) != rep.Totals.Errors+rep.Totals.Warnings {
		t.Fatalf("redocly lint: %d problems listed, totals %+v", len(out), rep.Totals)
	}
	r = runNode(t, tools, filepath.Join("node_modules", spectral), "lint", file, "--ruleset", ".spectral.yaml", "-f", "json", "--quiet")
	var found []struct {
		Code     any    `json:"code"`
		Message  string `json:"message"`
		Severity int    `json:"severity"`
		Path     []any  `json:"path"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &found); err != nil {
		t.Fatalf("spectral lint: exit %d, not a JSON report (%v):\n%.2000s%.2000s", r.code, err, r.stdout, r.stderr)
	}
	for _, f := range found {
		out = append(out, fmt.Sprintf("spectral severity %d %v at %v: %s", f.Severity, f.Code, f.Path, f.Message))
	}
	return out
}

// TestOpenAPILint lints a real hub's /v1/openapi.json with the pinned
// redocly and spectral: no finding at all, error or warning, but the one
// rule tools/npm/redocly.yaml turns off with its reason (info-license: the
// project states no license). The document names its server (the hub's
// URL), a tag and the refusals of every operation, and writes a Task once.
// A document they must fault is faulted: the check is live.
func TestOpenAPILint(t *testing.T) {
	tools := npmTools(t)
	h := startHub(t, "serve")
	code, body := h.get(t, "/v1/openapi.json")
	if code != 200 {
		t.Fatalf("GET /v1/openapi.json: %d %s", code, body)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	if servers, _ := doc["servers"].([]any); len(servers) != 1 || servers[0].(map[string]any)["url"] != h.url {
		t.Errorf("servers %v, want the hub's URL %s", doc["servers"], h.url)
	}
	t.Logf("the document: %d bytes", len(body))
	file := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if found := lintFindings(t, tools, file); len(found) != 0 {
		t.Fatalf("%d lint findings:\n%s", len(found), strings.Join(found, "\n"))
	}
	op := doc["paths"].(map[string]any)["/v1/tasks"].(map[string]any)["get"].(map[string]any)
	delete(op, "description")
	delete(op, "tags")
	bad, _ := json.Marshal(doc)
	if err := os.WriteFile(file, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if found := lintFindings(t, tools, file); len(found) < 2 {
		t.Fatalf("the linters took an operation without a description or a tag: %v", found)
	}
}
