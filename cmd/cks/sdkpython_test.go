package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// python3 is the interpreter for sdk/python's tests; without one the test is
// skipped, saying so, or fails under CI=true.
func python3(t testing.TB) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: no python3 on PATH for sdk/python")
		}
		t.Skip("no python3 on PATH: the Python SDK is not tested")
	}
	return py
}

// runPython runs python3 args in dir (runIn) with PYTHONPATH=dir plus env (a
// PYTHONPATH in env replaces it);
// no bytecode is written into the repository.
func runPython(t testing.TB, py, dir string, env []string, args ...string) (stdout, stderr string) {
	t.Helper()
	return runIn(t, dir, append([]string{"PYTHONPATH=" + dir, "PYTHONDONTWRITEBYTECODE=1"}, env...), py, args...)
}

// TestPythonSDK runs sdk/python's unittest suite against a real hub, on
// both backends, with the hub's URL and admin token in CKS_URL and
// CKS_TOKEN: the client's typed errors and fencing, the worker's claims,
// heartbeats, aborts and liveness — and the scenario table
// (sdk/scenarios.json): every scenario must have passed ("scenario ID ok"
// on the suite's output), and none be named that the table lacks. A suite
// that skipped its hub tests fails here. On SQLite it also holds
// sdk/python/cks/_operations.py to the hub's operations: the table
// tools/gen_operations.py makes from the hub's /v1/openapi.json must be the
// checked-in one.
func TestPythonSDK(t *testing.T) {
	py := python3(t)
	sdk, err := filepath.Abs(filepath.Join("..", "..", "sdk", "python"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("mypy", func(t *testing.T) { checkTypes(t, sdk, nil, "cks") })
	forBackends(t, func(t *testing.T, db testDB) {
		h := startHubEnv(t, "serve", scenarioHubEnv, "--database", db.url)
		if db.backend == "sqlite" {
			checkOperationTable(t, py, sdk, h)
		}
		marks, out := runPython(t, py, sdk, []string{"CKS_URL=" + h.url, "CKS_TOKEN=" + h.token},
			"-m", "unittest", "discover", "-s", "tests", "-v")
		if strings.Contains(out, "skipped") || !strings.Contains(out, "\nOK") {
			t.Fatalf("the Python SDK's tests did not all run and pass:\n%s", out)
		}
		holdToTable(t, "Python", scenarioMarks(marks))
	})
}

// checkOperationTable fails t when cks/_operations.py is not what
// tools/gen_operations.py makes of h's OpenAPI document.
func checkOperationTable(t *testing.T, py, sdk string, h *hubProc) {
	t.Helper()
	code, doc := h.get(t, "/v1/openapi.json")
	if code != 200 {
		t.Fatalf("GET /v1/openapi.json: %d %s", code, doc)
	}
	file := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	want, _ := runPython(t, py, sdk, nil, filepath.Join("tools", "gen_operations.py"), file)
	got, err := os.ReadFile(filepath.Join(sdk, "cks", "_operations.py"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("sdk/python/cks/_operations.py differs from the hub's operations; regenerate it:\n"+
			"  python3 sdk/python/tools/gen_operations.py URL-or-openapi.json > sdk/python/cks/_operations.py\nwant:\n%s", want)
	}
}

// checkTypes runs mypy in strict mode over target (a package or a file) in
// dir, with PYTHONPATH dir unless env sets it: Debian's python3-mypy, on
// whichever python3 has it (.ci/run installs it). Without one the check is
// skipped, saying so, or fails under CI=true.
func checkTypes(t *testing.T, dir string, env []string, target string) {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-m", "mypy", "--version").Run() != nil {
			continue
		}
		runPython(t, py, dir, env, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", t.TempDir(), target)
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true: no python3 with mypy (Debian's python3-mypy) for " + target + "'s types")
	}
	t.Skip("no python3 with mypy: " + target + "'s types are not checked")
}
