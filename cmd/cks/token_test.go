package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTokenCLI(t *testing.T) {
	h := startHub(t, "serve")
	run := func(env []string, args ...string) result {
		t.Helper()
		return runCKS(t, env, append(args, "--data-dir", string(h.dir))...)
	}
	// Create a read-only token on the task ledger.
	r := run(nil, "token", "create", "--name", "viewer", "--grant", "read:/tasks", "--json")
	var created struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Token  string `json:"token"`
		Grants []struct{ Resource, Permission string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &created); r.code != 0 || err != nil || created.Token == "" || created.Name != "viewer" ||
		len(created.Grants) != 1 || created.Grants[0].Permission != "read" || created.Grants[0].Resource != "/tasks" {
		t.Fatalf("token create: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	viewer := []string{"CKS_TOKEN=" + created.Token}
	if r := run(viewer, "task", "list"); r.code != 0 {
		t.Fatalf("viewer lists tasks: exit %d %s", r.code, r.stderr)
	}
	r = run(viewer, "task", "create", "--type", "x")
	if r.code != 1 || !strings.Contains(r.stderr, "needs create on /tasks") || !strings.Contains(r.stderr, "403") {
		t.Fatalf("viewer creates a task: exit %d %s", r.code, r.stderr)
	}
	if r := run(viewer, "token", "list"); r.code != 1 || !strings.Contains(r.stderr, "needs admin on /") {
		t.Fatalf("viewer lists tokens: exit %d %s", r.code, r.stderr)
	}

	// A task-scoped token in table form: the token is printed once, first.
	r = run(nil, "task", "create", "--type", "build", "--json")
	var task struct {
		Task struct {
			ID int64 `json:"task_id"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &task.Task); r.code != 0 || err != nil || task.Task.ID == 0 {
		t.Fatalf("task create: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	r = run(nil, "token", "create", "--task", itoa(task.Task.ID))
	if r.code != 0 || !strings.HasPrefix(r.stdout, "cks_") || !strings.Contains(r.stdout, "append:/tasks/"+itoa(task.Task.ID)) ||
		!strings.Contains(r.stdout, "task/"+itoa(task.Task.ID)) {
		t.Fatalf("token create --task:\n%s%s", r.stdout, r.stderr)
	}

	// List: every principal with its grants, never a token or hash.
	r = run(nil, "token", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "viewer") || !strings.Contains(r.stdout, "admin:/") ||
		strings.Contains(r.stdout, created.Token) || strings.Contains(r.stdout, h.token) {
		t.Fatalf("token list:\n%s%s", r.stdout, r.stderr)
	}
	r = run(nil, "token", "list", "--json")
	var list struct {
		Tokens []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); r.code != 0 || err != nil || len(list.Tokens) != 3 || strings.Contains(r.stdout, "hash") {
		t.Fatalf("token list --json: exit %d %v\n%s", r.code, err, r.stdout)
	}
	adminID := list.Tokens[0].ID

	// Revoke: the token stops working at once; the last admin is refused.
	if r := run(nil, "token", "revoke", created.ID); r.code != 0 || !strings.Contains(r.stdout, "revoked") {
		t.Fatalf("token revoke: exit %d %s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(viewer, "task", "list"); r.code != 1 || !strings.Contains(r.stderr, "401") {
		t.Fatalf("revoked token: exit %d %s", r.code, r.stderr)
	}
	if r := run(nil, "token", "revoke", adminID); r.code != 1 || !strings.Contains(r.stderr, "last") || !strings.Contains(r.stderr, "409") {
		t.Fatalf("revoke the last admin: exit %d %s", r.code, r.stderr)
	}
	if r := run(nil, "token", "revoke", "nobody"); r.code != 1 || !strings.Contains(r.stderr, "404") {
		t.Fatalf("revoke unknown: exit %d %s", r.code, r.stderr)
	}

	// Bad input is refused naming what was wrong: by the hub (exit 1, in
	// the words of create_token), or as a usage error (exit 2) when the
	// command line itself is malformed.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"token", "create", "--name", "x", "--grant", "write:/tasks"}, 1, `invalid permission: expected one of read, append, create, update, stop, start, cancel, retry, control, admin, got "write"`},
		{[]string{"token", "create", "--name", "x", "--grant", "read:/tasks/abc"}, 1, `got "/tasks/abc"`},
		{[]string{"token", "create", "--name", "x"}, 1, "invalid --grant: expected at least one grant (or a task_id)"},
		{[]string{"token", "create", "--grant", "read:/"}, 1, "invalid --name: expected a non-empty token name"},
		{[]string{"token", "create", "--name", "x", "--grant", "read"}, 2, "PERMISSION:RESOURCE"},
		{[]string{"token", "revoke"}, 2, "exactly one"},
		{[]string{"token", "frob"}, 2, "create, list or revoke"},
	} {
		if r := run(nil, c.args...); r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("cks %v: exit %d %q, want exit %d mentioning %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
