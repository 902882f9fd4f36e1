package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/datadir"
)

// cksBin is the cks binary the process-level tests run, built once.
var cksBin string

func TestMain(m *testing.M) {
	if os.Getenv(goWorkerEnv) != "" {
		os.Exit(goWorkerMain()) // a scenario's Go worker process, not a test run
	}
	dir, err := os.MkdirTemp("", "cks-bin-")
	if err != nil {
		panic(err)
	}
	cksBin = filepath.Join(dir, "cks")
	build := exec.Command("go", "build", "-o", cksBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cks:", err)
		os.Exit(1)
	}
	code := m.Run()
	// As goleak.VerifyTestMain, with the binary removed either way: a
	// goroutine a test started (a hub's, a store's) must not outlive it.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak: errors on successful test run:", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is a finished cks command.
type result struct {
	code           int
	stdout, stderr string
}

// runCKS runs the binary to completion with a clean CKS_* environment plus env.
func runCKS(t testing.TB, env []string, args ...string) result {
	t.Helper()
	return runCKSIn(t, "", env, args...)
}

// runCKSIn is runCKS in working directory dir ("": the test's).
func runCKSIn(t testing.TB, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cksBin, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("cks %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CKS_") {
			out = append(out, kv)
		}
	}
	return out
}

// hubProc is a running `cks serve`.
type hubProc struct {
	cmd    *exec.Cmd
	dir    datadir.Dir
	url    string
	token  string
	stderr *syncBuffer
	done   chan error
	gone   chan struct{} // closed once the process has exited
}

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startHub starts `cks <mode> --listen 127.0.0.1:0` on a temp data directory
// and waits until it has written its URL.
func startHub(t testing.TB, mode string, extra ...string) *hubProc {
	t.Helper()
	return startHubEnv(t, mode, nil, extra...)
}

// startHubEnv is startHub with env added to the hub's environment.
func startHubEnv(t testing.TB, mode string, env []string, extra ...string) *hubProc {
	t.Helper()
	return startHubDir(t, mode, datadir.Dir(t.TempDir()), env, extra...)
}

// startHubIn is startHub on the data directory dir, which may hold the
// files of an earlier hub (spawnHub does not take its hub.url for the new one's).
func startHubIn(t testing.TB, mode string, dir datadir.Dir, extra ...string) *hubProc {
	t.Helper()
	return startHubDir(t, mode, dir, nil, extra...)
}

// startHubDir is spawnHub failing t, with the hub killed at t's end.
func startHubDir(t testing.TB, mode string, dir datadir.Dir, env []string, extra ...string) *hubProc {
	t.Helper()
	h, err := spawnHub(dir, mode, env, extra...)
	if h != nil {
		t.Cleanup(h.kill)
	}
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// spawnHub starts `cks <mode> --listen 127.0.0.1:0 --data-dir dir` and
// waits until it serves. dir may hold a killed hub's files: its stale
// hub.url is not taken for the new hub's. It returns an error instead of
// failing a test, so that a test's goroutines can restart hubs; h is set
// whenever the process was started, and the caller ends it (h.kill).
func spawnHub(dir datadir.Dir, mode string, env []string, extra ...string) (*hubProc, error) {
	args := append([]string{mode, "--listen", "127.0.0.1:0", "--data-dir", string(dir)}, extra...)
	cmd := exec.Command(cksBin, args...)
	cmd.Env = append(cleanEnv(), env...)
	h := &hubProc{cmd: cmd, dir: dir, stderr: &syncBuffer{}, done: make(chan error, 1), gone: make(chan struct{})}
	cmd.Stderr = h.stderr
	cmd.Stdout = io.Discard
	stale, _ := dir.ReadURL()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		err := cmd.Wait()
		close(h.gone)
		h.done <- err
	}()
	exited := false
	served := poll(30*time.Second, func() bool {
		select {
		case <-h.gone:
			exited = true
			return true
		default:
		}
		u, err := dir.ReadURL()
		h.url = u
		// A restarted hub that got the killed one's port writes the same
		// URL; then its log says when it serves.
		return err == nil && (u != stale || strings.Contains(h.stderr.String(), `msg="hub serving"`))
	})
	switch {
	case exited:
		return h, fmt.Errorf("cks %s exited before serving:\n%s", mode, h.stderr.String())
	case !served:
		return h, fmt.Errorf("cks %s did not write its URL in time:\n%s", mode, h.stderr.String())
	}
	tok, err := dir.ReadToken()
	if err != nil {
		return h, err
	}
	h.token = tok
	return h, nil
}

// kill ends the hub with SIGKILL, if it still runs, and waits for its exit.
func (h *hubProc) kill() {
	h.cmd.Process.Kill()
	<-h.gone
}

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !poll(30*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// pollProgress calls cond every 10 ms until it reports done (true), or
// until what it counts has not grown for stall (false): the wait for work
// that moves at the machine's pace (tasks draining through agents), which
// a fixed deadline would fail on a loaded machine while the work still
// moves, and which this still fails once it has stopped moving.
func pollProgress(stall time.Duration, cond func() (done bool, count int)) bool {
	best, since := -1, time.Now()
	for {
		done, n := cond()
		if done {
			return true
		}
		if n > best {
			best, since = n, time.Now()
		} else if time.Since(since) > stall {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// poll calls cond every 10 ms until it holds (true) or timeout has passed
// (false): waitFor for goroutines, which must not fail the test.
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func (h *hubProc) get(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, body := h.do(t, "GET", path, "")
	return resp.StatusCode, body
}

// do sends method path with the admin token and body (JSON, when not
// empty) and returns the answer, read.
func (h *hubProc) do(t testing.TB, method, path, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, h.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+h.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// openStore opens the hub's SQLite database from the test process, as an agent
// process would.
func openStore(t testing.TB, dir datadir.Dir) *backend.Backend {
	t.Helper()
	s, err := backend.Open(context.Background(), dir.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// freshRow is a liveness row heartbeating now, so it reads alive on a real clock.
func freshRow(id, kind string) cks.AgentLiveness {
	r := backendtest.Liveness(id, kind, 0)
	r.StartedAt = time.Now().UTC()
	r.LastHeartbeatAt = r.StartedAt
	r.LivenessIntervalS = 3600
	task := int64(31)
	r.CurrentTaskID, r.CurrentTaskType = &task, "critique"
	return r
}

func TestHubEndToEnd(t *testing.T) {
	h := startHub(t, "serve")
	if code, body := h.get(t, "/healthz"); code != 200 || !strings.Contains(body, `"ok"`) {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	st, err := os.Stat(h.dir.TokenFile())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want mode 0600", st, err)
	}
	if !strings.Contains(h.stderr.String(), h.dir.TokenFile()) {
		t.Fatalf("hub log does not say where the token is:\n%s", h.stderr.String())
	}

	s := openStore(t, h.dir)
	alive := freshRow("proc-alive-1", "critic")
	dead := backendtest.Liveness("proc-dead-1", "pipeline", -24*time.Hour)
	backendtest.MustUpsert(t, s, alive)
	backendtest.MustUpsert(t, s, dead)

	// CLI, JSON: finds URL and token in the data directory.
	res := runCKS(t, nil, "process", "list", "--json", "--data-dir", string(h.dir))
	if res.code != 0 {
		t.Fatalf("process list --json: exit %d: %s", res.code, res.stderr)
	}
	var pl struct {
		Processes []struct {
			InstanceID    string `json:"instance_id"`
			ProcessKind   string `json:"process_kind"`
			Status        string `json:"status"`
			CurrentTaskID *int64 `json:"current_task_id"`
		} `json:"processes"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &pl); err != nil {
		t.Fatalf("process list --json is not JSON: %v\n%s", err, res.stdout)
	}
	got := map[string]string{}
	for _, p := range pl.Processes {
		got[p.InstanceID] = p.ProcessKind + "/" + p.Status
	}
	if got["proc-alive-1"] != "critic/alive" || got["proc-dead-1"] != "pipeline/stopped" {
		t.Fatalf("process list --json = %v", got)
	}

	// CLI, table; URL and token from the environment.
	res = runCKS(t, []string{"CKS_URL=" + h.url, "CKS_TOKEN=" + h.token}, "process", "list", "--data-dir", t.TempDir())
	if res.code != 0 || !strings.Contains(res.stdout, "STATUS") || !strings.Contains(res.stdout, "proc-ali") ||
		!strings.Contains(res.stdout, "#31 critique") {
		t.Fatalf("process list table: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCKS(t, nil, "process", "status", "critic", "--json", "--data-dir", string(h.dir))
	if res.code != 0 || !strings.Contains(res.stdout, `"instance_id": "proc-alive-1"`) || !strings.Contains(res.stdout, `"status": "alive"`) {
		t.Fatalf("process status critic: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCKS(t, nil, "process", "status", "enrichment", "--data-dir", string(h.dir))
	if res.code != 0 || !strings.Contains(res.stdout, "no enrichment process has ever reported") {
		t.Fatalf("process status of a never-started kind: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}

	// HTTP API.
	code, body := h.get(t, "/v1/processes")
	if code != 200 || !strings.Contains(body, `"instance_id":"proc-alive-1"`) {
		t.Fatalf("GET /v1/processes: %d %s", code, body)
	}

	// Studio page.
	code, body = h.get(t, "/")
	if code != 200 || !strings.Contains(body, "proc-alive-1") || !strings.Contains(body, "alive") {
		t.Fatalf("studio page: %d, lacks the process card:\n%s", code, body)
	}

	// MCP over streamable HTTP at /mcp, with the bearer token.
	sess := connectMCP(t, &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{h.token}}})
	assertMCPListsAlive(t, sess, "proc-alive-1")

	// Graceful shutdown on SIGTERM: exit 0 and the URL file is removed.
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatalf("hub exited with %v after SIGTERM\n%s", err, h.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hub did not stop after SIGTERM")
	}
	h.done <- nil // for the cleanup
	if _, err := os.Stat(h.dir.URLFile()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("hub.url still present after shutdown: %v", err)
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func connectMCP(t testing.TB, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c := mcp.NewClient(&mcp.Implementation{Name: "cks-test", Version: "0"}, nil)
	sess, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("mcp connect: %v", err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

func assertMCPListsAlive(t testing.TB, sess *mcp.ClientSession, instance string) {
	t.Helper()
	res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_processes", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list_processes: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var rows struct {
		Processes []map[string]any `json:"processes"`
	}
	json.Unmarshal(b, &rows)
	for _, p := range rows.Processes {
		if p["instance_id"] == instance {
			if p["status"] != "alive" {
				t.Fatalf("mcp list_processes: %s is %v, want alive", instance, p["status"])
			}
			return
		}
	}
	t.Fatalf("mcp list_processes lacks %s: %s", instance, b)
}

func TestMCPStdio(t *testing.T) {
	dir := datadir.Dir(t.TempDir())
	s := openStore(t, dir)
	backendtest.MustUpsert(t, s, freshRow("stdio-1", "enrichment"))
	cmd := exec.Command(cksBin, "mcp", "--embedded", "--data-dir", string(dir))
	cmd.Env = cleanEnv()
	sess := connectMCP(t, &mcp.CommandTransport{Command: cmd})
	assertMCPListsAlive(t, sess, "stdio-1")
	res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "process_status",
		Arguments: map[string]any{"process_kind": "non sense"}})
	if err != nil || !res.IsError {
		t.Fatalf("process_status(non sense): err %v, IsError %v; want a tool error", err, res != nil && res.IsError)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, "process_kind") || !strings.Contains(text, "a process kind") {
		t.Fatalf("no kind's error does not name the field and its rule: %s", text)
	}
}

func TestDevPrintsURLAndToken(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(cksBin, "dev", "--listen", "127.0.0.1:0", "--data-dir", dir)
	cmd.Env = cleanEnv()
	out := &syncBuffer{}
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	waitFor(t, "dev banner", func() bool { return strings.Contains(out.String(), "Press Ctrl-C") })
	seen := out.String()
	tok, _ := datadir.Dir(dir).ReadToken()
	u, _ := datadir.Dir(dir).ReadURL()
	if !strings.Contains(seen, u+"/") || !strings.Contains(seen, tok) || !strings.Contains(seen, "(sqlite)") {
		t.Fatalf("dev banner lacks URL, token or backend:\n%s", seen)
	}
	resp, err := http.Get(u + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz of cks dev: %v", err)
	}
	resp.Body.Close()
}

// TestBadInput: each mistake exits non-zero with a one-line error naming what
// was wrong and what was expected, and leaves the data directory untouched.
func TestBadInput(t *testing.T) {
	notDB := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notDB, []byte("hello"), 0o644)
	cases := []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"unknown scheme", []string{"serve", "--listen", "127.0.0.1:0", "--database", "mysql://x/y"}, nil,
			[]string{`unknown database scheme "mysql"`, "postgres://"}},
		{"scheme from env", []string{"serve", "--listen", "127.0.0.1:0"}, []string{"CKS_DATABASE_URL=redis://x"},
			[]string{`unknown database scheme "redis"`}},
		{"unreachable postgres", []string{"serve", "--listen", "127.0.0.1:0", "--database", "postgres://postgres@127.0.0.1:1/cks"}, nil,
			[]string{"127.0.0.1:1"}},
		{"not a sqlite file", []string{"serve", "--listen", "127.0.0.1:0", "--database", notDB}, nil,
			[]string{"not a SQLite database"}},
		{"bad listen", []string{"serve", "--listen", "nonsense"}, nil,
			[]string{`bad --listen address "nonsense"`, "HOST:PORT"}},
		{"unknown command", []string{"frobnicate"}, nil, []string{`unknown command "frobnicate"`}},
		{"unknown flag", []string{"serve", "--nope"}, nil, []string{"flag provided but not defined: -nope"}},
		{"status without kind", []string{"process", "status"}, nil, []string{"exactly one KIND"}},
		{"no hub", []string{"process", "list"}, nil, []string{"no hub URL", "--url", "CKS_URL"}},
		{"no token", []string{"process", "list", "--url", "http://127.0.0.1:1"}, nil, []string{"no token", "CKS_TOKEN"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			res := runCKS(t, c.env, append(c.args, "--data-dir", dir)...)
			if res.code == 0 {
				t.Fatalf("exit 0, want failure\n%s", res.stderr)
			}
			lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
			last := lines[len(lines)-1]
			for _, w := range c.want {
				if !strings.Contains(last, w) {
					t.Errorf("error line %q lacks %q", last, w)
				}
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("failed command created %s", dir)
			}
		})
	}
	if b, _ := os.ReadFile(notDB); string(b) != "hello" {
		t.Fatal("the non-SQLite file was modified")
	}
}

func TestClientErrorsFromHub(t *testing.T) {
	h := startHub(t, "serve")
	res := runCKS(t, nil, "process", "status", "bo gus", "--data-dir", string(h.dir))
	if res.code == 0 || !strings.Contains(res.stderr, `invalid process_kind: expected a process kind`) || !strings.Contains(res.stderr, `"bo gus"`) ||
		!strings.Contains(res.stderr, "HTTP 400") {
		t.Fatalf("status bogus: exit %d: %s", res.code, res.stderr)
	}
	wrong := "cks_" + strings.Repeat("A", 43)
	res = runCKS(t, []string{"CKS_TOKEN=" + wrong}, "process", "list", "--data-dir", string(h.dir))
	if res.code == 0 || !strings.Contains(res.stderr, "unknown token") || !strings.Contains(res.stderr, "HTTP 401") {
		t.Fatalf("wrong token: exit %d: %s", res.code, res.stderr)
	}
}

// testDB is a fresh database of one backend for process-level tests: url is
// what hub and agents get as --database; open gives the test its own handle.
type testDB struct {
	backend string
	url     string
	open    func(t testing.TB) *backend.Backend
}

// forBackends runs f as a parallel subtest on a fresh SQLite file and on a
// scratch schema of CKS_TEST_DATABASE_URL (skipped when unset, unless CI=true).
func forBackends(t *testing.T, f func(t *testing.T, db testDB)) {
	t.Helper()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var db testDB
			if name == "sqlite" {
				db = testDB{backend: name, url: "sqlite:" + filepath.Join(t.TempDir(), "cks.db")}
			} else {
				db = testDB{backend: name, url: backendtest.PostgresURL(t)}
			}
			db.open = func(t testing.TB) *backend.Backend {
				t.Helper()
				s, err := backend.Open(context.Background(), db.url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			f(t, db)
		})
	}
}

// agentProc is a running agent process: `cks agent …`, or a worker of
// another client (startProc).
type agentProc struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
	code           int // exit status, valid once done is closed; -1 when a signal ended it
}

// startAgent starts `cks agent ARGS…` with a clean CKS_* environment plus env;
// the cleanup kills it if the test has not ended it.
func startAgent(t testing.TB, env []string, args ...string) *agentProc {
	t.Helper()
	a, err := spawnAgent(env, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.kill)
	return a
}

// spawnAgent is startAgent for a test's goroutines: an error instead of a
// failed test, and no cleanup (the caller ends the process, a.kill).
func spawnAgent(env []string, args ...string) (*agentProc, error) {
	return spawnAgentIn("", env, args...)
}

// startAgentIn is startAgent in working directory dir.
func startAgentIn(t testing.TB, dir string, args ...string) *agentProc {
	t.Helper()
	a, err := spawnAgentIn(dir, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.kill)
	return a
}

// spawnAgentIn is spawnAgent in working directory dir ("": the test's).
func spawnAgentIn(dir string, env []string, args ...string) (*agentProc, error) {
	return spawnProc(dir, env, cksBin, append([]string{"agent"}, args...)...)
}

// startProc is startAgent for any program: name args, with a clean CKS_*
// environment plus env.
func startProc(t testing.TB, env []string, name string, args ...string) *agentProc {
	t.Helper()
	a, err := spawnProc("", env, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.kill)
	return a
}

// spawnProc starts name args in working directory dir ("": the test's)
// with a clean CKS_* environment plus env, keeping its output.
func spawnProc(dir string, env []string, name string, args ...string) (*agentProc, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Dir = dir
	a := &agentProc{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = a.stdout, a.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		err := cmd.Wait()
		a.code = 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			a.code = ee.ExitCode()
		} else if err != nil {
			a.code = -1
		}
		close(a.done)
	}()
	return a, nil
}

// kill ends the agent with SIGKILL, if it still runs, and waits for its exit.
func (a *agentProc) kill() {
	a.cmd.Process.Kill()
	<-a.done
}

func (a *agentProc) exited() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// wait waits for the agent to exit and returns its exit status.
func (a *agentProc) wait(t testing.TB) int {
	t.Helper()
	select {
	case <-a.done:
		return a.code
	case <-time.After(30 * time.Second):
		t.Fatalf("agent did not exit\n%s", a.stderr.String())
		return 0
	}
}

// waitLog waits until the agent's stderr contains s.
func (a *agentProc) waitLog(t testing.TB, s string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("agent log %q", s), func() bool {
		if a.exited() && !strings.Contains(a.stderr.String(), s) {
			t.Fatalf("agent exited (status %d) before logging %q\n%s", a.code, s, a.stderr.String())
		}
		return strings.Contains(a.stderr.String(), s)
	})
}

// pidGone reports whether process pid no longer runs: no /proc entry, or a
// zombie (PID 1 of a container may never reap an orphan).
func pidGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// readPID reads a pid a test command wrote to file, waiting for it.
func readPID(t testing.TB, file string) int {
	t.Helper()
	var pid int
	waitFor(t, "pid file "+file, func() bool {
		b, err := os.ReadFile(file)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		_, err = fmt.Sscan(string(b), &pid)
		return err == nil && pid > 0
	})
	return pid
}
