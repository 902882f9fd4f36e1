package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
)

// TestTaskLogsCLI (a real hub, SQLite): cks task logs ID prints the
// output's text as the attempt printed it, --json the page; -f follows it
// — a chunk appended while it follows included — until the attempt
// completes, then says the task's state; an unknown task is a usage error.
func TestTaskLogsCLI(t *testing.T) {
	h := startHub(t, "serve")
	run := func(args ...string) result {
		t.Helper()
		return runCKS(t, nil, append(args, "--data-dir", string(h.dir))...)
	}
	if r := run("task", "create", "--type", "logs", "--title", "t"); r.code != 0 {
		t.Fatalf("create: %d %s", r.code, r.stderr)
	}
	r := run("api", "claim_tasks", `{"worker":"w","types":["logs"]}`)
	var claimed cks.ClaimedTasks
	if err := json.Unmarshal([]byte(r.stdout), &claimed); r.code != 0 || err != nil || len(claimed.Tasks) != 1 {
		t.Fatalf("claim: %d %v %s", r.code, err, r.stderr)
	}
	id, lease := claimed.Tasks[0].ID, claimed.Tasks[0].LeaseToken
	add := func(stream, text string) {
		t.Helper()
		b, _ := json.Marshal(cks.AppendOutputInput{LeaseInput: cks.LeaseInput{TaskID: id, LeaseToken: lease}, Stream: stream, Text: text})
		if r := run("api", "append_output", string(b)); r.code != 0 {
			t.Fatalf("append: %d %s%s", r.code, r.stdout, r.stderr)
		}
	}
	add("stdout", "building\n")
	add("stderr", "warning: x\n")
	ids := fmt.Sprint(id)
	if r := run("task", "logs", ids); r.code != 0 || r.stdout != "building\nwarning: x\n" {
		t.Fatalf("task logs: %d %q %s", r.code, r.stdout, r.stderr)
	}
	var page cks.OutputPage
	if r := run("task", "logs", ids, "--after", "1", "--json"); json.Unmarshal([]byte(r.stdout), &page) != nil || len(page.Chunks) != 1 || page.Chunks[0].Stream != "stderr" || !page.Live {
		t.Fatalf("task logs --after 1 --json: %d %s %s", r.code, r.stdout, r.stderr)
	}
	followed := make(chan result, 1)
	go func() { followed <- run("task", "logs", ids, "-f") }()
	add("stdout", "done\n")
	if r := run("api", "complete_task", fmt.Sprintf(`{"task_id":%d,"lease_token":%q}`, id, lease)); r.code != 0 {
		t.Fatalf("complete: %d %s", r.code, r.stderr)
	}
	f := <-followed
	if f.code != 0 || f.stdout != "building\nwarning: x\ndone\n" || !strings.Contains(f.stderr, "COMPLETED") {
		t.Fatalf("task logs -f: %d %q %q", f.code, f.stdout, f.stderr)
	}
	if r := run("task", "logs", fmt.Sprint(id+100)); r.code == 0 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("task logs of an unknown task: %d %s", r.code, r.stderr)
	}
}

// TestExecAgentStreamsOutput (both backends): a real `cks agent exec`
// process whose command prints and then waits has those lines in the
// task's live output — read over the hub's API while the command still
// runs — and a follower sees the rest and the attempt's end.
func TestExecAgentStreamsOutput(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		h := startHub(t, "serve", "--database", db.url)
		api := client.New(h.url, h.token)
		dir := t.TempDir()
		id := newTask(t, api, "chatty", "prints as it goes")
		script := `echo "step 1"; echo "warning: slow" >&2; while [ ! -e "$T_DIR/go" ]; do sleep 0.01; done; echo "step 2"`
		a := startAgent(t, []string{"T_DIR=" + dir}, append([]string{"exec", "--database", db.url, "--types", "chatty"},
			append(fastAgent, "--", "sh", "-c", script)...)...)
		waitFor(t, "the command's first lines in the live output", func() bool {
			p, err := api.Output(context.Background(), id, 0, 0)
			var b strings.Builder
			for _, c := range p.Chunks {
				b.WriteString(c.Text)
			}
			return err == nil && strings.Contains(b.String(), "step 1\n") && strings.Contains(b.String(), "warning: slow\n")
		})
		if task := getTask(t, api, id); task.State != cks.TaskRunning {
			t.Fatalf("task %d is %s while its command waits", id, task.State)
		}
		var got strings.Builder
		followed := make(chan error, 1)
		go func() {
			end, err := api.FollowOutput(context.Background(), id, 0, func(c cks.OutputChunk) { got.WriteString(c.Stream + ":" + c.Text) })
			if err == nil && end.State != cks.TaskCompleted {
				err = fmt.Errorf("the follow ended with the task %s", end.State)
			}
			followed <- err
		}()
		os.WriteFile(filepath.Join(dir, "go"), nil, 0o644) //nolint:errcheck // the wait below fails without it
		if err := <-followed; err != nil {
			t.Fatal(err)
		}
		if s := got.String(); !strings.Contains(s, "stdout:step 1\n") || !strings.Contains(s, "stderr:warning: slow\n") || !strings.HasSuffix(s, "stdout:step 2\n") {
			t.Fatalf("followed %q", s)
		}
		a.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // the wait says
		a.wait(t)
	})
}
