package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
)

// TestTaskControlCLI: task stop, start and update, their output and exit
// codes, and task list showing STOPPED tasks first.
func TestTaskControlCLI(t *testing.T) {
	h := startHub(t, "serve")
	ctx := context.Background()
	api := client.New(h.url, h.token)
	run := func(args ...string) result {
		t.Helper()
		return runCKS(t, nil, append(args, "--data-dir", string(h.dir))...)
	}
	ok := func(r result) result {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		return r
	}
	create := func(typ, title string) int64 {
		t.Helper()
		task, _, err := api.CreateTask(ctx, cks.NewTask{Type: typ, Title: title})
		if err != nil {
			t.Fatal(err)
		}
		return task.ID
	}
	running := func(typ, worker string, id int64) string {
		t.Helper()
		claimed, err := api.Claim(ctx, worker, []string{typ}, 1, time.Minute)
		if err != nil || len(claimed) != 1 || claimed[0].ID != id {
			t.Fatalf("claim %s: %+v %v", typ, claimed, err)
		}
		if _, err := api.MarkRunning(ctx, id, claimed[0].LeaseToken); err != nil {
			t.Fatal(err)
		}
		return claimed[0].LeaseToken
	}
	x := create("build", "the build")
	y := create("other", "held one")
	z1, z2 := create("dep", "z1"), create("dep", "z2")
	ids := func(ns ...int64) string {
		var s []string
		for _, n := range ns {
			s = append(s, fmt.Sprint(n))
		}
		return strings.Join(s, ",")
	}

	// Stop an OPEN task.
	r := ok(run("task", "stop", fmt.Sprint(y), "--reason", "look at it"))
	if want := fmt.Sprintf("task %d STOPPED (was OPEN); no executor held it", y); !strings.Contains(r.stdout, want) {
		t.Fatalf("stop OPEN printed %q, want %q", r.stdout, want)
	}

	// List: the STOPPED task first, in its own marked section.
	r = ok(run("task", "list"))
	lines := strings.Split(r.stdout, "\n")
	if !strings.HasPrefix(lines[0], "!! STOPPED: 1 task") || !strings.Contains(lines[1], "STOPPED FOR") ||
		!strings.HasPrefix(lines[2], fmt.Sprint(y)+" ") || !strings.Contains(lines[2], "held one") {
		t.Fatalf("list does not open with the STOPPED section:\n%s", r.stdout)
	}
	if i := strings.Index(r.stdout, "the build"); i < strings.Index(r.stdout, "held one") {
		t.Fatalf("list shows other tasks before the STOPPED one:\n%s", r.stdout)
	}
	var listing struct {
		Stopped int `json:"stopped"`
		Tasks   []struct {
			ID        int64  `json:"task_id"`
			State     string `json:"state"`
			LastAbort *struct {
				Outcome  string `json:"outcome"`
				Executor string `json:"executor"`
			} `json:"last_abort"`
		} `json:"tasks"`
	}
	r = ok(run("task", "list", "--json"))
	if err := json.Unmarshal([]byte(r.stdout), &listing); err != nil || listing.Stopped != 1 || len(listing.Tasks) != 4 ||
		listing.Tasks[0].ID != y || listing.Tasks[0].State != "STOPPED" {
		t.Fatalf("list --json: %v %+v\n%s", err, listing, r.stdout)
	}
	// --order id (or a state filter) lists by id, with no STOPPED section.
	for _, args := range [][]string{{"--order", "id"}, {"--state", "OPEN,STOPPED"}} {
		r = ok(run(append([]string{"task", "list"}, args...)...))
		if !strings.HasPrefix(r.stdout, "ID ") || strings.Contains(r.stdout, "!! STOPPED") || strings.Index(r.stdout, "the build") > strings.Index(r.stdout, "held one") {
			t.Fatalf("list %v is not by id:\n%s", args, r.stdout)
		}
	}

	// Update a STOPPED task in place, with id lists repeated and comma-separated.
	var up struct {
		Path string `json:"path"`
		Task struct {
			Revision  int     `json:"revision"`
			State     string  `json:"state"`
			DependsOn []int64 `json:"depends_on"`
		} `json:"task"`
		Abort *struct {
			Outcome  string `json:"outcome"`
			Executor string `json:"executor"`
		} `json:"abort"`
		Children []struct {
			ID    int64  `json:"task_id"`
			Title string `json:"title"`
		} `json:"children"`
	}
	r = ok(run("task", "update", fmt.Sprint(y), "--criteria", "it works", "--add-dep", ids(z1, z2), "--add-child", "sub:first, part", "--json"))
	if err := json.Unmarshal([]byte(r.stdout), &up); err != nil || up.Path != "in_place" || up.Task.Revision != 2 ||
		up.Task.State != "STOPPED" || len(up.Task.DependsOn) != 2 || len(up.Children) != 1 || up.Children[0].Title != "first, part" {
		t.Fatalf("update --json: %v %+v\n%s", err, up, r.stdout)
	}
	r = ok(run("task", "update", fmt.Sprint(y), "--remove-dep", fmt.Sprint(z1), "--remove-dep", fmt.Sprint(z2), "--title", "held"))
	if want := fmt.Sprintf("task %d updated (title, remove_depends_on): path in_place, revision 3, now STOPPED", y); !strings.Contains(r.stdout, want) {
		t.Fatalf("update printed %q, want %q", r.stdout, want)
	}
	ok(run("task", "update", fmt.Sprint(y), "--add-dep", fmt.Sprint(z1)))
	// show lists each edit with its fields' old and new values.
	r = ok(run("task", "show", fmt.Sprint(y)))
	for _, want := range []string{"\nedits:\n", "(update: acceptance_criteria, add_depends_on, add_children):\n",
		`    acceptance_criteria: "" → "it works"` + "\n", fmt.Sprintf("    add_depends_on: [%d,%d]\n", z1, z2),
		`    title: "held one" → "held"` + "\n", fmt.Sprintf("    remove_depends_on: [%d,%d]\n", z1, z2)} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("show does not print %q:\n%s", want, r.stdout)
		}
	}
	// Start re-evaluates: the added dependency is unmet.
	r = ok(run("task", "start", fmt.Sprint(y)))
	if want := fmt.Sprintf("task %d started: WAITING (restart 1", y); !strings.Contains(r.stdout, want) {
		t.Fatalf("start printed %q, want %q", r.stdout, want)
	}

	// Refusals: exit 1 with the hub's reason as it says it — naming the
	// flag of the field it blames, and its code once — or 2 for a usage
	// error (flag syntax).
	bad := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"task", "start", fmt.Sprint(y)}, 1, "WAITING"},
		{[]string{"task", "stop", fmt.Sprint(y)}, 1, "cks: invalid --reason: expected a non-empty reason (why the task is held) (invalid_argument, HTTP 400)"},
		{[]string{"task", "stop", fmt.Sprint(y), "--reason", "r", "--deadline", "soon"}, 2, "deadline"},
		{[]string{"task", "stop", fmt.Sprint(y), "--reason", "r", "--deadline", "1h"}, 1, "deadline"},
		{[]string{"task", "update", fmt.Sprint(y)}, 1, "cks: invalid patch: expected at least one field to change (invalid_argument, HTTP 400)"},
		{[]string{"task", "update", fmt.Sprint(y), "--payload", "{nope"}, 2, "--payload"},
		{[]string{"task", "update", fmt.Sprint(y), "--add-dep", "x1"}, 2, "expected a task id"},
		{[]string{"task", "update", fmt.Sprint(z1), "--add-dep", fmt.Sprint(y)}, 1, "invalid --add-dep: expected"},
		{[]string{"task", "answer", fmt.Sprint(y), "yes"}, 1, "answer needs NEEDS_INPUT: conflict (HTTP 409)\n"},
		{[]string{"task", "update", fmt.Sprint(y), "--add-child", ":no type"}, 2, "TYPE:TITLE"},
		{[]string{"task", "update", "99999", "--title", "t"}, 1, "99999"},
	}
	for _, c := range bad {
		r := run(c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}

	// Stop a RUNNING task whose executor confirms the abort.
	lease := running("build", "agent-1", x)
	confirmed := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := api.ConfirmAbort(ctx, x, lease)
			if err == nil || time.Now().After(deadline) {
				confirmed <- err
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	r = ok(run("task", "stop", fmt.Sprint(x), "--reason", "runaway"))
	if err := <-confirmed; err != nil {
		t.Fatalf("executor confirm: %v", err)
	}
	if want := fmt.Sprintf("task %d STOPPED (was RUNNING); abort confirmed by agent-1", x); !strings.Contains(r.stdout, want) {
		t.Fatalf("stop RUNNING printed %q, want %q", r.stdout, want)
	}

	// Update a RUNNING task materially without waiting: stop_apply_start.
	ok(run("task", "start", fmt.Sprint(x)))
	running("build", "agent-2", x)
	r = ok(run("task", "update", fmt.Sprint(x), "--criteria", "v2", "--wait=false", "--json"))
	up.Abort, up.Children = nil, nil
	if err := json.Unmarshal([]byte(r.stdout), &up); err != nil || up.Path != "stop_apply_start" || up.Task.State != "OPEN" ||
		up.Abort == nil || up.Abort.Outcome != "abort_pending" || up.Abort.Executor != "agent-2" {
		t.Fatalf("update RUNNING --wait=false --json: %v %+v\n%s", err, up, r.stdout)
	}
	// A non-material edit leaves it running.
	lease3 := running("build", "agent-3", x)
	r = ok(run("task", "update", fmt.Sprint(x), "--priority", "9"))
	if !strings.Contains(r.stdout, "path live") || !strings.Contains(r.stdout, "now RUNNING") {
		t.Fatalf("live update printed %q", r.stdout)
	}
	// No view of the running task shows its lease token (or an earlier one).
	for _, args := range [][]string{{"task", "show", fmt.Sprint(x), "--json"}, {"task", "show", fmt.Sprint(x)},
		{"task", "list", "--json"}, {"task", "list"}} {
		r := ok(run(args...))
		if strings.Contains(r.stdout, lease3) || strings.Contains(r.stdout, lease) || strings.Contains(r.stdout, "lease_token") {
			t.Fatalf("%v shows a lease token:\n%s", args, r.stdout)
		}
	}

	// An executor that ignores the abort: exit 3, impossible to miss.
	r = run("task", "stop", fmt.Sprint(x), "--reason", "wedged", "--deadline", "100ms")
	want := fmt.Sprintf("task %d STOPPED (was RUNNING)\nabort UNCONFIRMED after 100ms: executor agent-3 may still be running", x)
	if r.code != 3 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stderr, "agent-3 may still be running") {
		t.Fatalf("unconfirmed stop: exit %d\n%s%s\nwant exit 3 and %q", r.code, r.stdout, r.stderr, want)
	}
	r = run("task", "stop", fmt.Sprint(x), "--reason", "again", "--json")
	if r.code != 1 || !strings.Contains(r.stderr, "STOPPED") || !strings.Contains(r.stderr, "409") {
		t.Fatalf("stop a STOPPED task: exit %d %s", r.code, r.stderr)
	}
	r = ok(run("task", "list"))
	if !strings.HasPrefix(r.stdout, "!! STOPPED: 1 task") || !strings.Contains(r.stdout, "UNCONFIRMED: agent-3 may still be running") {
		t.Fatalf("list does not show the unconfirmed abort:\n%s", r.stdout)
	}
	r = ok(run("task", "list", "--json"))
	if err := json.Unmarshal([]byte(r.stdout), &listing); err != nil || listing.Stopped != 1 || listing.Tasks[0].ID != x ||
		listing.Tasks[0].LastAbort == nil || listing.Tasks[0].LastAbort.Outcome != "abort_unconfirmed" || listing.Tasks[0].LastAbort.Executor != "agent-3" {
		t.Fatalf("list --json after an unconfirmed abort: %v %+v", err, listing)
	}
	// Show: the current attempt apart from the aborted history, and the aborts.
	r = ok(run("task", "show", fmt.Sprint(x)))
	for _, s := range []string{"current attempt", "history (earlier attempts", "ABORTED", "aborts:", "UNCONFIRMED", "CONFIRMED", "agent-1", "runaway"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("show does not mention %q:\n%s", s, r.stdout)
		}
	}

	// stop --json: parseable, and still exit 3 when unconfirmed.
	ok(run("task", "start", fmt.Sprint(x)))
	running("build", "agent-4", x)
	r = run("task", "stop", fmt.Sprint(x), "--reason", "json", "--deadline", "50ms", "--json")
	var sr struct {
		Task struct {
			State string `json:"state"`
		} `json:"task"`
		Abort struct {
			Outcome  string `json:"outcome"`
			Executor string `json:"executor"`
		} `json:"abort"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sr); r.code != 3 || err != nil || sr.Task.State != "STOPPED" ||
		sr.Abort.Outcome != "abort_unconfirmed" || sr.Abort.Executor != "agent-4" {
		t.Fatalf("stop --json: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}

	// Retry: a cancelled task opens again with a fresh budget; an OPEN one
	// is the hub's conflict.
	ok(run("task", "cancel", fmt.Sprint(z2), "--reason", "not yet"))
	r = ok(run("task", "retry", fmt.Sprint(z2), "--reason", "now"))
	if want := fmt.Sprintf("task %d retried: OPEN (restart 1, attempts 0 of 3, revision 1)\n", z2); r.stdout != want {
		t.Fatalf("retry printed %q, want %q", r.stdout, want)
	}
	r = run("task", "retry", fmt.Sprint(z2))
	if r.code != 1 || !strings.Contains(r.stderr, "is OPEN, retry needs FAILED or CANCELLED") || !strings.Contains(r.stderr, "409") {
		t.Fatalf("retry an OPEN task: exit %d %s", r.code, r.stderr)
	}
}

// TestTaskBulkCLI: `cks task bulk VERB` over a filter goes through it call
// by call (--limit), with a progress line after each call that more
// follow, and prints every task's outcome (--json: one answer of them all);
// over --ids it says which it refused and why; an abort an executor does
// not confirm is exit 3, as for task stop.
func TestTaskBulkCLI(t *testing.T) {
	h := startHub(t, "serve")
	ctx := context.Background()
	api := client.New(h.url, h.token)
	run := func(args ...string) result {
		t.Helper()
		return runCKS(t, nil, append(args, "--data-dir", string(h.dir))...)
	}
	var ids []int64
	for range 5 {
		task, _, err := api.CreateTask(ctx, cks.NewTask{Type: "bulky"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	r := run("task", "bulk", "stop", "--state", "OPEN", "--type", "bulky", "--reason", "freeze", "--limit", "2")
	if r.code != 0 || strings.Count(r.stderr, "more follow\n") != 2 || !strings.Contains(r.stderr, "4 tasks so far (4 done, 0 refused)") ||
		!strings.HasPrefix(r.stdout, "task bulk stop: 5 done, 0 refused\n") || strings.Count(r.stdout, " OPEN ") != 5 {
		t.Fatalf("bulk stop by filter: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run("task", "bulk", "start", "--ids", fmt.Sprintf("%d,%d,99999", ids[0], ids[1]), "--json")
	var res cks.BulkResult
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != 0 || err != nil || res.Done != 2 || res.Refused != 1 ||
		res.Tasks[2].TaskID != 99999 || !strings.Contains(res.Tasks[2].Reason, "not found") {
		t.Fatalf("bulk start --ids --json: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	r = run("task", "bulk", "start", "--ids", fmt.Sprint(ids[0]))
	if r.code != 0 || !strings.Contains(r.stdout, "0 done, 1 refused") || !strings.Contains(r.stdout, "refused: task") {
		t.Fatalf("bulk start of a started task: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	claimed, err := api.Claim(ctx, "agent-b", []string{"bulky"}, 1, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	r = run("task", "bulk", "stop", "--ids", fmt.Sprint(claimed[0].ID), "--reason", "wedged", "--deadline", "50ms")
	if r.code != 3 || !strings.Contains(r.stdout, "1 UNCONFIRMED") || !strings.Contains(r.stderr, "agent-b (task") {
		t.Fatalf("bulk stop of an executor that does not confirm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
