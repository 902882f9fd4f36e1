package studio_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/surface/studio"
)

// running enqueues a task of type typ and has worker claim it and run it.
func running(t *testing.T, s *backend.Backend, typ, title, worker string) cks.ClaimedTask {
	t.Helper()
	ctx := context.Background()
	task := backendtest.MustEnqueue(t, s, cks.NewTask{Type: typ, Title: title, AcceptanceCriteria: "the old criteria"})
	ts, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: worker, Types: []string{typ}, N: 1, Lease: time.Hour})
	if err != nil || len(ts) != 1 || ts[0].ID != task.ID {
		t.Fatalf("claim %s: %v, %+v", typ, err, ts)
	}
	if _, err := s.Tasks.MarkRunning(ctx, task.ID, ts[0].LeaseToken); err != nil {
		t.Fatal(err)
	}
	return ts[0]
}

func stop(t *testing.T, s *backend.Backend, id int64, reason string) *cks.Abort {
	t.Helper()
	stopped, err := s.Tasks.StopTask(context.Background(), ledger.StopParams{ID: id, Actor: "operator", Reason: reason, Deadline: time.Minute})
	ab := stopped.Abort
	if err != nil {
		t.Fatalf("stop %d: %v", id, err)
	}
	return ab
}

// expire lets the deadline of the abort ab of task id pass unconfirmed, as
// the lease reaper settles it (ExpireAborts at the deadline, which settles
// every abort due by then), and checks that the task shows it unconfirmed.
func expire(t *testing.T, s *backend.Backend, id int64, ab *cks.Abort) {
	t.Helper()
	if _, err := s.Tasks.ExpireAborts(context.Background(), ab.DeadlineAt); err != nil {
		t.Fatalf("expire the abort of task %d: %v", id, err)
	}
	task, err := s.Tasks.GetTask(context.Background(), id)
	if err != nil || task.LastAbort == nil || task.LastAbort.ID != ab.ID || task.LastAbort.Outcome != cks.AbortUnconfirmed {
		t.Fatalf("task %d after its abort's deadline: last abort %+v, %v; want %d unconfirmed", id, task.LastAbort, err, ab.ID)
	}
}

// before reports whether a occurs in body before b (both must occur).
func before(t *testing.T, body, a, b string) bool {
	t.Helper()
	i, j := strings.Index(body, a), strings.Index(body, b)
	if i < 0 || j < 0 {
		t.Fatalf("%q at %d, %q at %d in\n%s", a, i, b, j, body)
	}
	return i < j
}

// rowOf returns the board row of task id in body.
func rowOf(t *testing.T, body string, id int64) string {
	t.Helper()
	i := strings.Index(body, fmt.Sprintf(`<a href="/tasks/%d">#%d</a>`, id, id))
	if i < 0 {
		t.Fatalf("no row for task %d in\n%s", id, body)
	}
	start := strings.LastIndex(body[:i], "<tr")
	end := i + strings.Index(body[i:], "</tr>")
	return body[start:end]
}

// TestBoardStoppedFirstWithDurationAndAbortFlags: the STOPPED section leads
// the board, longest held first; every row says for how long (from the
// injected clock) and flags an abort that is unconfirmed (naming the
// executor that may still be running) or still pending.
func TestBoardStoppedFirstWithDurationAndAbortFlags(t *testing.T) {
	e := newFullEnv(t)
	open := enqueue(t, e.store, "plain", "Still open")
	idle := enqueue(t, e.store, "plain", "Held before it ran")
	stop(t, e.store, idle.ID, "wait for the quarter")
	e.clock.Advance(50 * time.Hour)
	gone := running(t, e.store, "gone", "Executor vanished", "worker-gone")
	ab := stop(t, e.store, gone.ID, "runaway")
	if ab == nil || ab.Outcome != cks.AbortPending {
		t.Fatalf("stop of a running task: abort %+v, want pending", ab)
	}
	expire(t, e.store, gone.ID, ab)
	e.clock.Advance(90 * time.Minute)
	slow := running(t, e.store, "slow", "Executor still answering", "worker-slow")
	stop(t, e.store, slow.ID, "pause")
	e.clock.Advance(5 * time.Minute)
	run := running(t, e.store, "run", "Running along", "worker-run")

	page := get(t, e.h, "/tasks")
	wantHTML(t, page, http.StatusOK)
	if !before(t, page.body, `id="stopped-heading"`, `id="inbox-heading"`) || !before(t, page.body, `id="stopped-heading"`, `id="live-heading"`) {
		t.Errorf("the STOPPED section is not first")
	}
	stopped := section(t, page.body, `id="stopped-heading"`, `id="inbox-heading"`)
	mustContain(t, "stopped section", page.body, `board-stopped board-stopped--some`, `STOPPED <span class="chip__n">3</span>`)
	mustContain(t, "stopped section", stopped, `Stopped <span class="count">3</span>`, "1 stopped for longer than 24 h.",
		"2 with an abort that is not confirmed")
	mustNotContain(t, "stopped section", stopped, "Still open", "Running along")

	// Longest held first.
	if !before(t, stopped, "Held before it ran", "Executor vanished") || !before(t, stopped, "Executor vanished", "Executor still answering") {
		t.Errorf("stopped rows are not longest-held first:\n%s", stopped)
	}
	r := rowOf(t, stopped, idle.ID)
	mustContain(t, "long stop", r, `row--stopped row--stale`, `state--stopped">STOPPED<`, "stopped for <time", ">2d 3h</time>", "over 24 h")
	mustNotContain(t, "long stop", r, "badge--abort")
	r = rowOf(t, stopped, gone.ID)
	mustContain(t, "unconfirmed stop", r, ">1h 35m</time>", `badge badge--abort-unconfirmed`,
		"abort unconfirmed: worker-gone may still be running")
	mustNotContain(t, "unconfirmed stop", r, "row--stale")
	r = rowOf(t, stopped, slow.ID)
	mustContain(t, "pending stop", r, ">5m</time>", `badge badge--abort-pending`, "abort pending: waiting for worker-slow to confirm")

	live := section(t, page.body, `id="live-heading"`, `id="finished-heading"`)
	mustContain(t, "live", live, "Still open", "Running along")
	mustNotContain(t, "live", live, "stopped for", "badge--abort")
	_, _ = open, run

	// The STOPPED filter shows the same markers.
	f := get(t, e.h, "/tasks?state=STOPPED")
	mustContain(t, "STOPPED list", f.body, "abort unconfirmed: worker-gone may still be running", ">2d 3h</time>")

	// The task page of the unconfirmed stop says so, naming the executor.
	p := get(t, e.h, fmt.Sprintf("/tasks/%d", gone.ID))
	wantHTML(t, p, http.StatusOK)
	mustContain(t, "task page", p.body, `notice--abort-unconfirmed`, "Abort unconfirmed.", "<code>worker-gone</code>",
		"may still be running", "Stopped for 1h 35m")
	aborts := p.body[strings.Index(p.body, `id="aborts-heading"`):strings.Index(p.body, `id="events-heading"`)]
	mustContain(t, "aborts", aborts, `Aborts <span class="count">1</span>`, `<td data-label="Reason">runaway</td>`, `<td data-label="By">operator</td>`,
		"<code>worker-gone</code>", "abort_unconfirmed", "worker-gone may still be running", "2026-12-02 14:01:00 UTC")
}

// TestTaskPageSeparatesCurrentAttemptFromHistory: what an aborted attempt
// recorded (evidence, decisions, workspace) appears only under history,
// marked aborted; the current attempt shows its own, with decisions derived
// from an older revision of the task marked stale.
func TestTaskPageSeparatesCurrentAttemptFromHistory(t *testing.T) {
	e := newFullEnv(t)
	ctx := context.Background()
	first := running(t, e.store, "build", "Build the thing", "worker-1")
	id := first.ID
	for kind, body := range map[string]string{cks.EvidenceWorkspace: "/work/ws-aborted", "note": "evidence of the aborted attempt"} {
		if _, err := e.store.Tasks.AddEvidence(ctx, id, first.LeaseToken, kind, body); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.store.Tasks.RecordDecision(ctx, id, first.LeaseToken, "plan_decomposed", "split into two parts", 1); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	ab := stop(t, e.store, id, "rewrite the criteria")
	if _, err := e.store.Tasks.ConfirmAbort(ctx, id, first.LeaseToken); err != nil {
		t.Fatal(err)
	}
	crit := "the new criteria"
	if _, err := e.store.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: id, Actor: "operator", Patch: cks.TaskPatch{AcceptanceCriteria: &crit}}); err != nil {
		t.Fatal(err)
	}

	// STOPPED: the page offers Start, not Stop.
	p := get(t, e.h, fmt.Sprintf("/tasks/%d", id))
	wantHTML(t, p, http.StatusOK)
	actions := section(t, p.body, `id="task-actions"`, `id="fields-heading"`)
	mustContain(t, "stopped actions", actions, `data-task-action="start"`, `>Start</button>`)
	mustNotContain(t, "stopped actions", actions, `data-task-action="stop"`)

	if _, err := e.store.Tasks.Start(ctx, id, "operator", "criteria fixed"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	ts, err := e.store.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "worker-2", Types: []string{"build"}, N: 1, Lease: time.Hour})
	if err != nil || len(ts) != 1 {
		t.Fatalf("claim after start: %v %+v", err, ts)
	}
	second := ts[0]
	if _, err := e.store.Tasks.AddEvidence(ctx, id, second.LeaseToken, "note", "evidence of the current attempt"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Tasks.RecordDecision(ctx, id, second.LeaseToken, "atomic", "no decomposition needed", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Tasks.RecordDecision(ctx, id, second.LeaseToken, "needs_review", "judged on the old text", 1); err != nil {
		t.Fatal(err)
	}

	p = get(t, e.h, fmt.Sprintf("/tasks/%d", id))
	wantHTML(t, p, http.StatusOK)
	mustContain(t, "fields", p.body, "<dt>Revision</dt><dd>2</dd>", "<dt>Restarts</dt><dd>1</dd>", "<dt>Attempts</dt><dd>1 of 3</dd>")

	current := section(t, p.body, `id="current-heading"`, `id="history-heading"`)
	mustContain(t, "current", current, "(restart 1, attempt 1, task revision 2)", "evidence of the current attempt",
		"no decomposition needed", "derived from revision 2", "judged on the old text", "derived from revision 1",
		"stale: derived from revision 1, task is at 2")
	mustNotContain(t, "current", current, "evidence of the aborted attempt", "split into two parts", "/work/ws-aborted", "badge--aborted")
	if n := strings.Count(current, "badge--stale"); n != 1 {
		t.Errorf("current attempt has %d stale decisions, want 1:\n%s", n, current)
	}

	history := section(t, p.body, `id="history-heading"`, `id="aborts-heading"`)
	mustContain(t, "history", history, `History of earlier attempts <span class="count">1</span>`,
		`attempt attempt--aborted`, `Restart 0 · attempt 1 <span class="badge badge--aborted">aborted</span>`,
		"evidence of the aborted attempt", "split into two parts", "<code>/work/ws-aborted</code>",
		"stale: derived from revision 1, task is at 2")
	mustNotContain(t, "history", history, "evidence of the current attempt", "no decomposition needed")

	aborts := section(t, p.body, `id="aborts-heading"`, `id="events-heading"`)
	mustContain(t, "aborts", aborts, `<td data-label="Reason">rewrite the criteria</td>`, "<code>worker-1</code>", "abort_confirmed",
		`badge--abort-confirmed`, `<td class="num" data-label="Restart · attempt">0 · 1</td>`, shownTime(ab.DeadlineAt))
	mustNotContain(t, "aborts", aborts, "may still be running")
	mustNotContain(t, "page", p.body, "notice--abort")

	// CLAIMED: the page offers Stop with a reason, not Start.
	actions = section(t, p.body, `id="task-actions"`, `id="fields-heading"`)
	mustContain(t, "running actions", actions, fmt.Sprintf(`data-task-actions="%d"`, id), `<form class="task-action" data-task-action="stop" data-key="action-stop">`,
		`<input id="stop-reason" name="reason" type="text" required`, `>Stop</button>`, "data-action-error")
	mustNotContain(t, "running actions", actions, `data-task-action="start"`)

	// Finished: neither.
	if _, err := e.store.Tasks.Complete(ctx, id, second.LeaseToken, false, "done"); err != nil {
		t.Fatal(err)
	}
	p = get(t, e.h, fmt.Sprintf("/tasks/%d", id))
	actions = section(t, p.body, `id="task-actions"`, `id="fields-heading"`)
	mustContain(t, "finished actions", actions, "finished, nothing to stop, start or cancel")
	mustNotContain(t, "finished actions", actions, "<button")
}

func shownTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// TestTaskPageWiresStopAndStart: the task page loads the script, and the
// script posts to the HTTP API's stop and start endpoints with the cookie.
func TestTaskPageWiresStopAndStart(t *testing.T) {
	e := newFullEnv(t)
	task := enqueue(t, e.store, "plain", "Wire me")
	p := get(t, e.h, fmt.Sprintf("/tasks/%d", task.ID))
	refs := assetRef.FindAllStringSubmatch(p.body, -1)
	var js string
	for _, m := range refs {
		if strings.Contains(m[1], ".js") {
			js = get(t, e.h, strings.ReplaceAll(m[1], "&amp;", "&")).body
		}
	}
	if js == "" {
		t.Fatalf("task page does not load the script\n%s", p.body)
	}
	mustContain(t, "task page", p.body, `id="live"`, `data-live-fragment="/studio/tasks/`+strconv.FormatInt(task.ID, 10)+`"`, `data-live-events="tasks"`)
	mustContain(t, "studio.js", js, "[data-task-actions]", `"/v1/tasks/" + id + "/stop"`, `"/v1/tasks/" + id + "/start"`,
		`"/v1/tasks/" + id + "/cancel"`, `"/v1/tasks/" + id + "/answer"`, `["PATCH", "/v1/tasks/" + id]`, `["POST", "/v1/tasks"]`,
		`"tasks", "objects"`, "reason: reason, wait: false", `method: "POST"`, `credentials: "same-origin"`, `"Content-Type": "application/json"`)
	_ = studio.TasksPath
}

// TestTaskPageOffersRetry: a FAILED task's page offers Retry to a viewer who
// holds retry on it, and to one who does not a disabled Retry naming the
// permission it needs; the script posts the retry to the HTTP API's
// retry_task.
func TestTaskPageOffersRetry(t *testing.T) {
	e := newFullEnv(t)
	ctx := context.Background()
	task := running(t, e.store, "flaky", "Flaky thing", "worker-1")
	if _, err := e.store.Tasks.Fail(ctx, task.ID, task.LeaseToken, false, "broke"); err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/tasks/%d", task.ID)
	actions := section(t, get(t, e.h, path).body, `id="task-actions"`, `id="fields-heading"`)
	mustContain(t, "failed actions", actions, `<form class="task-action" data-task-action="retry" data-key="action-retry">`, `>Retry</button>`,
		"fresh attempt budget")
	mustNotContain(t, "failed actions", actions, `data-task-action="stop"`, `data-task-action="start"`)

	reader, _, err := auth.CreateToken(ctx, e.store.Principals, e.clock, "reader", []cks.Grant{{Resource: "/", Permission: auth.PermRead}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	e.h.ServeHTTP(rec, req.WithContext(auth.WithPrincipal(req.Context(), e.store.Principals, reader)))
	actions = section(t, rec.Body.String(), `id="task-actions"`, `id="fields-heading"`)
	mustContain(t, "failed actions of a reader", actions, `data-task-action-button disabled title="`, "retry")
	mustNotContain(t, "failed actions of a reader", actions, `data-task-action-button>Retry</button>`)

	var js string
	for _, m := range assetRef.FindAllStringSubmatch(get(t, e.h, path).body, -1) {
		if strings.Contains(m[1], ".js") {
			js = get(t, e.h, strings.ReplaceAll(m[1], "&amp;", "&")).body
		}
	}
	mustContain(t, "studio.js", js, `retry: (id) => ["POST", "/v1/tasks/" + id + "/retry"]`)
}

// TestBoardBulkForm: a filtered board has the bulk form, its filter as the
// bulk operations take it and a checkbox per row; a viewer who may stop but
// not cancel sees Cancel disabled with the permission it needs; the
// default board (no filter) has no bulk form.
func TestBoardBulkForm(t *testing.T) {
	e := newFullEnv(t)
	ctx := context.Background()
	task := enqueue(t, e.store, "build", "Nightly build")
	path := "/tasks?state=OPEN&q=nightly"
	page := get(t, e.h, path).body
	mustContain(t, "bulk form", page, `<form id="bulk" class="bulk" data-bulk="{&#34;state&#34;:[&#34;OPEN&#34;],&#34;q&#34;:&#34;nightly&#34;}"`,
		`<option value="stop">Stop</option>`, `<option value="retry">Retry</option>`,
		fmt.Sprintf(`data-bulk-select value="%d"`, task.ID), `data-bulk-all`)
	mustNotContain(t, "default board", get(t, e.h, "/tasks").body, `id="bulk"`, `data-bulk-select`)

	stopper, _, err := auth.CreateToken(ctx, e.store.Principals, e.clock, "stopper",
		[]cks.Grant{{Resource: "/", Permission: auth.PermRead}, {Resource: "/", Permission: auth.PermStop}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	e.h.ServeHTTP(rec, req.WithContext(auth.WithPrincipal(req.Context(), e.store.Principals, stopper)))
	mustContain(t, "a stopper's bulk form", rec.Body.String(), `<option value="stop">Stop</option>`,
		`<option value="cancel" disabled title="`, "needs cancel")
}

// TestTaskPageSaysWhoMovedIt: on both backends, a task page says under its
// title who moved the task into its state, when and why: the operator and
// reason of a stop, the creator of a new task.
func TestTaskPageSaysWhoMovedIt(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		h := taskStudio(b)
		held := backendtest.MustEnqueue(t, b, cks.NewTask{Type: "build", Title: "held"})
		if _, err := b.Tasks.StopTask(context.Background(), ledger.StopParams{ID: held.ID, Actor: "night-operator", Reason: "freeze window", Deadline: cks.DefaultAbortDeadline}); err != nil {
			t.Fatal(err)
		}
		r := get(t, h, fmt.Sprintf("/tasks/%d", held.ID))
		wantHTML(t, r, http.StatusOK)
		mustContain(t, "the stopped task's page", section(t, r.body, "<h1>", `id="actions-heading"`),
			`data-moved>STOPPED since <time`, `by <strong>night-operator</strong>`, `freeze window</span>`)
		fresh := backendtest.MustEnqueue(t, b, cks.NewTask{Type: "build", Title: "new"})
		r = get(t, h, fmt.Sprintf("/tasks/%d", fresh.ID))
		mustContain(t, "the new task's page", section(t, r.body, "<h1>", `id="actions-heading"`), `data-moved>Created <time`)
	})
}
