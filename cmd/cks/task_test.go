package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
)

func TestTaskCLI(t *testing.T) {
	h := startHub(t, "serve")
	dd := []string{"--data-dir", string(h.dir)}
	run := func(args ...string) result {
		t.Helper()
		return runCKS(t, nil, append(args, dd...)...)
	}
	type task struct {
		ID        int64   `json:"task_id"`
		State     string  `json:"state"`
		Priority  int     `json:"priority"`
		DependsOn []int64 `json:"depends_on"`
		Answer    string  `json:"answer"`
		Events    []struct {
			To string `json:"to"`
		} `json:"events"`
	}
	decode := func(r result) task {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var v task
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, r.stdout)
		}
		return v
	}

	a := decode(run("task", "create", "--type", "research", "--title", "first", "--priority", "9",
		"--payload", `{"topic":"bees"}`, "--dedupe-key", "bees", "--json"))
	if a.ID == 0 || a.State != "OPEN" || a.Priority != 9 {
		t.Fatalf("create = %+v", a)
	}
	b := decode(run("task", "create", "--type", "research", "--depends-on", fmt.Sprint(a.ID), "--json"))
	if b.State != "WAITING" || len(b.DependsOn) != 1 || b.DependsOn[0] != a.ID {
		t.Fatalf("dependent create = %+v", b)
	}
	if dup := decode(run("task", "create", "--type", "research", "--dedupe-key", "bees", "--json")); dup.ID != a.ID {
		t.Fatalf("dedupe returned %d, want %d", dup.ID, a.ID)
	}
	// Delayed tasks: --delay DURATION, --run-after TIME (RFC 3339); a time
	// that is none is a usage error naming the flag.
	var delayed struct {
		State    string    `json:"state"`
		RunAfter time.Time `json:"run_after"`
	}
	before := time.Now().Truncate(time.Millisecond) // the hub keeps microseconds
	rd := run("task", "create", "--type", "later", "--delay", "1h", "--json")
	after := time.Now()
	if err := json.Unmarshal([]byte(rd.stdout), &delayed); rd.code != 0 || err != nil || delayed.State != "OPEN" ||
		delayed.RunAfter.Before(before.Add(time.Hour)) || delayed.RunAfter.After(after.Add(time.Hour)) {
		t.Fatalf("create --delay 1h between %s and %s: exit %d %v: %s%s", before, after, rd.code, err, rd.stdout, rd.stderr)
	}
	at := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	rd = run("task", "create", "--type", "later", "--run-after", at.Format(time.RFC3339), "--json")
	if err := json.Unmarshal([]byte(rd.stdout), &delayed); rd.code != 0 || err != nil || !delayed.RunAfter.Equal(at) {
		t.Fatalf("create --run-after: exit %d %v: %s%s", rd.code, err, rd.stdout, rd.stderr)
	}
	if r := run("task", "create", "--type", "later", "--run-after", "tomorrow"); r.code != 2 || !strings.Contains(r.stderr, "run-after") {
		t.Fatalf("create --run-after tomorrow: exit %d: %s", r.code, r.stderr)
	}
	// A JSON flag reads @FILE: the payload is the file's JSON as written.
	file := filepath.Join(t.TempDir(), "payload.json")
	if err := os.WriteFile(file, []byte(`{"from":"a file","n":[1,2]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r0 := run("task", "create", "--type", "filed", "--payload", "@"+file, "--json")
	var filed struct {
		ID      int64           `json:"task_id"`
		Payload json.RawMessage `json:"payload"`
	}
	var compact bytes.Buffer
	if err := json.Unmarshal([]byte(r0.stdout), &filed); r0.code != 0 || err != nil || json.Compact(&compact, filed.Payload) != nil ||
		compact.String() != `{"from":"a file","n":[1,2]}` {
		t.Fatalf("create --payload @FILE: exit %d %v\n%s%s", r0.code, err, r0.stdout, r0.stderr)
	}
	if c := decode(run("task", "cancel", fmt.Sprint(filed.ID), "--json")); c.State != "CANCELLED" {
		t.Fatalf("cancel the filed task: %+v", c)
	}

	r := run("task", "list", "--state", "WAITING", "--json")
	var page struct {
		Tasks []task `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); r.code != 0 || err != nil || len(page.Tasks) != 1 || page.Tasks[0].ID != b.ID {
		t.Fatalf("list --state WAITING: %d %v %s", r.code, err, r.stdout)
	}
	r = run("task", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "STATE") || !strings.Contains(r.stdout, "first") {
		t.Fatalf("list table:\n%s%s", r.stdout, r.stderr)
	}
	r = run("task", "show", fmt.Sprint(a.ID))
	if r.code != 0 || !strings.Contains(r.stdout, "bees") || !strings.Contains(r.stdout, "events:") {
		t.Fatalf("show:\n%s%s", r.stdout, r.stderr)
	}
	if c := decode(run("task", "cancel", fmt.Sprint(a.ID), "--reason", "enough", "--json")); c.State != "CANCELLED" {
		t.Fatalf("cancel = %+v", c)
	}
	if got := decode(run("task", "show", fmt.Sprint(b.ID), "--json")); got.State != "BLOCKED" {
		t.Fatalf("dependant of a cancelled task is %s, want BLOCKED", got.State)
	}

	bad := []struct {
		args []string
		want string
	}{
		{[]string{"task", "create", "--title", "x"}, "type"},
		{[]string{"task", "create", "--type", "t", "--payload", "{nope"}, "--payload: expected a JSON value"},
		{[]string{"task", "create", "--type", "t", "--payload", "@" + filepath.Join(t.TempDir(), "absent.json")}, "--payload: open"},
		{[]string{"task", "create", "--type", "t", "--priority", "-4"}, "priority"},
		{[]string{"task", "create", "--type", "t", "--depends-on", "99999"}, "invalid --depends-on: expected ids"},
		{[]string{"task", "list", "--state", "DONE"}, "state"},
		// Text no store backend stores is refused by the hub, naming the field.
		{[]string{"task", "create", "--type", "t", "--payload", `{"a":"\u0000"}`}, "invalid --payload: expected JSON in UTF-8"},
		{[]string{"task", "create", "--type", "t", "--payload", "[\"\xff\"]"}, "invalid --payload: expected JSON in UTF-8"},
		{[]string{"task", "update", fmt.Sprint(b.ID), "--metadata", `{"\u0000":1}`}, "invalid --metadata: expected JSON in UTF-8"},
		{[]string{"task", "list", "--type", "bad\xffutf8"}, "invalid --type: expected text without NUL bytes, in UTF-8"},
		{[]string{"task", "show", "99999"}, "99999"},
		{[]string{"task", "show", "abc"}, "expected a task ID"},
		{[]string{"task", "answer", fmt.Sprint(a.ID), "late"}, "CANCELLED"},
	}
	for _, c := range bad {
		r := run(c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want failure mentioning %q", c.args, r.code, r.stderr, c.want)
		}
	}
	r = run("task", "list", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Tasks) != 5 { // a, b, the filed one and the two delayed ones
		t.Fatalf("bad input changed the ledger: %d tasks", len(page.Tasks))
	}
}

// TestTaskViewWithoutHub (issue 39.10): the default `task list` puts what
// just happened on its first page — a task that failed after 120 others
// were created (in id order, main's, it was past the first hundred) — and
// once the hub is gone, stopped (no hub.url) or killed (its URL refuses
// connections), `task list` and `task show` read the data directory's
// database, saying so, as `process list` does.
func TestTaskViewWithoutHub(t *testing.T) {
	h := startHub(t, "serve")
	dir := string(h.dir)
	api := client.New(h.url, h.token)
	ctx := context.Background()
	for i := range 120 {
		if _, _, err := api.CreateTask(ctx, cks.NewTask{Type: "filler", Title: fmt.Sprintf("filler %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	flaky, _, err := api.CreateTask(ctx, cks.NewTask{Type: "flaky", Title: "the one that failed", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := api.Claim(ctx, "w", []string{"flaky"}, 1, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if _, err := api.Fail(ctx, flaky.ID, claimed[0].LeaseToken, false, "exit status 1"); err != nil {
		t.Fatal(err)
	}
	failedRow := regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+FAILED\s+flaky`, flaky.ID))
	r := runCKS(t, nil, "task", "list", "--data-dir", dir)
	if r.code != 0 || !failedRow.MatchString(r.stdout) {
		t.Fatalf("task list: exit %d; want the FAILED task %d on the first page:\n%s%s", r.code, flaky.ID, r.stdout, r.stderr)
	}
	check := func(how string) {
		t.Helper()
		r := runCKS(t, nil, "task", "list", "--data-dir", dir)
		if r.code != 0 || !failedRow.MatchString(r.stdout) || !strings.Contains(r.stderr, "read from the database") {
			t.Fatalf("task list with the hub %s: exit %d\n%s%s", how, r.code, r.stdout, r.stderr)
		}
		r = runCKS(t, nil, "task", "show", itoa(flaky.ID), "--data-dir", dir)
		if r.code != 0 || !strings.Contains(r.stdout, "FAILED") || !strings.Contains(r.stdout, "the one that failed") ||
			!strings.Contains(r.stderr, "read from the database") {
			t.Fatalf("task show with the hub %s: exit %d\n%s%s", how, r.code, r.stdout, r.stderr)
		}
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	<-h.gone
	check("stopped")
	killed := startHubIn(t, "serve", h.dir)
	killed.kill()
	check("killed")
}
