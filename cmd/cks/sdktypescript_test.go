package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// npmSDK is sdk/typescript's directory, after checking that node and npm are
// on PATH; without them the test is skipped, saying so, or fails under CI=true.
func npmSDK(t testing.TB) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true: no %s on PATH for sdk/typescript (.ci/run installs node and npm)", tool)
			}
			t.Skipf("no %s on PATH: the TypeScript SDK is not tested", tool)
		}
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "sdk", "typescript"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// runIn runs name args in dir with a clean CKS_* environment plus env, and
// returns its standard output and error, failing t with them on a non-zero exit.
func runIn(t testing.TB, dir string, env []string, name string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// TestTypeScriptSDK installs sdk/typescript's pinned dev dependencies (npm
// ci: offline once npm's cache holds them; .ci/run warms it), builds it
// (tsc, strict) and type-checks its tests, then runs its node:test suite
// against a real hub on both backends, with the hub's URL and admin token in
// CKS_URL and CKS_TOKEN: the client's typed errors, retries and fencing, the
// worker's claims, heartbeats, aborts and liveness — and the scenario table
// (sdk/scenarios.json): every scenario must have passed ("# scenario ID ok"
// in the TAP output), and none be named that the table lacks. A suite that
// skipped or failed any test fails here. On SQLite it also holds src/openapi.d.ts and
// src/operations.ts to the hub: what tools/generate.mjs makes of the hub's
// /v1/openapi.json must be the checked-in files.
func TestTypeScriptSDK(t *testing.T) {
	sdk := npmSDK(t)
	runIn(t, sdk, nil, "npm", "ci", "--prefer-offline", "--no-audit", "--no-fund")
	runIn(t, sdk, nil, "npm", "run", "check")
	runIn(t, sdk, nil, "npm", "run", "build")
	runIn(t, sdk, nil, "npm", "run", "build:test")
	forBackends(t, func(t *testing.T, db testDB) {
		h := startHubEnv(t, "serve", scenarioHubEnv, "--database", db.url)
		if db.backend == "sqlite" {
			checkGenerated(t, sdk, h)
		}
		out, _ := runIn(t, sdk, []string{"CKS_URL=" + h.url, "CKS_TOKEN=" + h.token},
			"node", "--test", "--test-reporter=tap", "--test-concurrency=1",
			"dist-test/test/client.test.js", "dist-test/test/retry.test.js", "dist-test/test/worker.test.js")
		if strings.Contains(out, "# SKIP") || !strings.Contains(out, "\n# fail 0\n") || !strings.Contains(out, "\n# skipped 0\n") ||
			!strings.Contains(out, "\n# cancelled 0\n") || !strings.Contains(out, "\n# todo 0\n") {
			t.Fatalf("the TypeScript SDK's tests did not all run and pass:\n%s", out)
		}
		holdToTable(t, "TypeScript", scenarioMarks(out))
	})
}

// checkGenerated fails t when src/openapi.d.ts or src/operations.ts is not
// what tools/generate.mjs makes of h's OpenAPI document.
func checkGenerated(t *testing.T, sdk string, h *hubProc) {
	t.Helper()
	code, doc := h.get(t, "/v1/openapi.json")
	if code != 200 {
		t.Fatalf("GET /v1/openapi.json: %d %s", code, doc)
	}
	tmp := t.TempDir()
	file := filepath.Join(tmp, "openapi.json")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	runIn(t, sdk, nil, "node", filepath.Join("tools", "generate.mjs"), file, tmp)
	for _, name := range []string{"openapi.d.ts", "operations.ts"} {
		want, err := os.ReadFile(filepath.Join(tmp, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(sdk, "src", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("sdk/typescript/src/%s differs from what the hub's /v1/openapi.json makes; regenerate it:\n"+
				"  (cd sdk/typescript && npm ci && node tools/generate.mjs URL-or-openapi.json)", name)
		}
	}
}
