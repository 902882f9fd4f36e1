package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/service/auth"
)

func ptr[T any](v T) *T { return &v }

// claimRunning claims task id (the only OPEN task of its type) as worker and
// marks it RUNNING, returning the lease token.
func claimRunning(t testing.TB, c *client.Client, typ, worker string, id int64) string {
	t.Helper()
	ctx := context.Background()
	claimed, err := c.Claim(ctx, worker, []string{typ}, 1, time.Minute)
	if err != nil || len(claimed) != 1 || claimed[0].ID != id {
		t.Fatalf("claim %s as %s: %+v %v, want task %d", typ, worker, claimed, err, id)
	}
	if _, err := c.MarkRunning(ctx, id, claimed[0].LeaseToken); err != nil {
		t.Fatal(err)
	}
	return claimed[0].LeaseToken
}

// confirmer is an executor that confirms the abort of lease on task id as
// soon as one is requested, woken by the abort topic (no polling).
func (f *fixture) confirmer(t testing.TB, c *client.Client, id int64, lease string) (wait func() cks.Abort) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	var (
		wg  sync.WaitGroup
		got cks.Abort
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.store.Changes.WatchChanges(ctx, []string{cks.TopicTaskAborts}, func(string) {
			if ab, err := c.ConfirmAbort(ctx, id, lease); err == nil {
				got = ab
				cancel()
			}
		})
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() cks.Abort {
		wg.Wait()
		if got.Outcome != cks.AbortConfirmed {
			t.Fatalf("the executor never confirmed the abort of task %d", id)
		}
		return got
	}
}

func TestStopStartUpdateOverHTTP(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	ctx := context.Background()

	a, _, err := c.CreateTask(ctx, cks.NewTask{Type: "build", Title: "a", AcceptanceCriteria: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	// An OPEN task: straight to STOPPED, no abort.
	res, err := c.StopTask(ctx, a.ID, client.StopRequest{Reason: "investigate"})
	if err != nil || res.Task.State != cks.TaskStopped || res.Abort != nil {
		t.Fatalf("stop OPEN: %+v %v", res, err)
	}
	// A STOPPED task is edited in place; start re-evaluates.
	up, err := c.UpdateTask(ctx, a.ID, client.UpdateRequest{Patch: cks.TaskPatch{AcceptanceCriteria: ptr("v2")}})
	if err != nil || up.Path != cks.UpdateInPlace || up.Task.Revision != 2 || up.Task.State != cks.TaskStopped || up.Abort != nil {
		t.Fatalf("update STOPPED: %+v %v", up, err)
	}
	started, err := c.StartTask(ctx, a.ID, "")
	if err != nil || started.State != cks.TaskOpen || started.Restarts != 1 || started.Attempts != 0 {
		t.Fatalf("start: %+v %v", started, err)
	}

	// A running task updated materially, without waiting: stop_apply_start,
	// the abort pending, the task claimable again at the new revision.
	lease1 := claimRunning(t, c, "build", "w1", a.ID)
	up, err = c.UpdateTask(ctx, a.ID, client.UpdateRequest{Patch: cks.TaskPatch{AcceptanceCriteria: ptr("v3")}, NoWait: true})
	if err != nil || up.Path != cks.UpdateRestart || up.Abort == nil || up.Abort.Outcome != cks.AbortPending ||
		up.Abort.Executor != "w1" || up.Task.State != cks.TaskOpen || up.Task.Revision != 3 || up.Task.AcceptanceCriteria != "v3" {
		t.Fatalf("update RUNNING, wait=false: %+v %v", up, err)
	}
	if _, err := c.AddEvidence(ctx, a.ID, lease1, "note", "zombie"); !client.IsLeaseLost(err) {
		t.Fatalf("evidence with the revoked lease: %v, want lease_lost", err)
	}
	// The old executor confirms late; a lease nobody aborted is 404.
	ab, err := c.ConfirmAbort(ctx, a.ID, lease1)
	if err != nil || ab.Outcome != cks.AbortConfirmed || ab.ID != up.Abort.ID {
		t.Fatalf("confirm abort: %+v %v", ab, err)
	}
	if _, err := c.ConfirmAbort(ctx, a.ID, "no-such-lease"); apiErr(t, err).Status != http.StatusNotFound {
		t.Fatalf("confirm with an unknown lease: %v, want 404", err)
	}

	// Waiting, with an executor that confirms: abort_confirmed.
	lease2 := claimRunning(t, c, "build", "w2", a.ID)
	confirmed := f.confirmer(t, c, a.ID, lease2)
	up, err = c.UpdateTask(ctx, a.ID, client.UpdateRequest{Patch: cks.TaskPatch{Description: ptr("new text")}, Deadline: 15 * time.Second})
	if err != nil || up.Path != cks.UpdateRestart || up.Abort == nil || up.Abort.Outcome != cks.AbortConfirmed || up.Abort.Executor != "w2" {
		t.Fatalf("update RUNNING, wait: %+v %v", up, err)
	}
	confirmed()

	// Non-material edits of a running task apply live.
	lease3 := claimRunning(t, c, "build", "w3", a.ID)
	up, err = c.UpdateTask(ctx, a.ID, client.UpdateRequest{Patch: cks.TaskPatch{Priority: ptr(7), Metadata: json.RawMessage(`{"owner":"ops"}`)}})
	if err != nil || up.Path != cks.UpdateLive || up.Abort != nil || up.Task.State != cks.TaskRunning || up.Task.Priority != 7 {
		t.Fatalf("live update: %+v %v", up, err)
	}

	// Stop with an executor that ignores the abort: unconfirmed after the
	// deadline, the task STOPPED, the record naming the executor.
	res, err = c.StopTask(ctx, a.ID, client.StopRequest{Reason: "runaway", Deadline: 50 * time.Millisecond})
	if err != nil || res.Task.State != cks.TaskStopped || res.Abort == nil || res.Abort.Outcome != cks.AbortUnconfirmed ||
		res.Abort.Executor != "w3" {
		t.Fatalf("stop RUNNING, ignored: %+v %v", res, err)
	}
	got, err := c.GetTask(ctx, a.ID)
	if err != nil || got.LastAbort == nil || got.LastAbort.Outcome != cks.AbortUnconfirmed || got.LastAbort.Executor != "w3" || len(got.Aborts) != 3 {
		t.Fatalf("show after unconfirmed stop: %+v %v", got.LastAbort, err)
	}
	if _, err := c.Touch(ctx, a.ID, lease3); err != nil {
		t.Fatal(err)
	}

	// Stop without waiting: abort_pending at once.
	if _, err := c.StartTask(ctx, a.ID, "resume"); err != nil {
		t.Fatal(err)
	}
	claimRunning(t, c, "build", "w4", a.ID)
	res, err = c.StopTask(ctx, a.ID, client.StopRequest{Reason: "hold", NoWait: true})
	if err != nil || res.Task.State != cks.TaskStopped || res.Abort == nil || res.Abort.Outcome != cks.AbortPending || res.Abort.Executor != "w4" {
		t.Fatalf("stop RUNNING, wait=false: %+v %v", res, err)
	}
	// Attempts count attempts, not restarts.
	got, _ = c.GetTask(ctx, a.ID)
	if got.Attempts != 0 || got.Restarts != 4 {
		t.Fatalf("after four aborted attempts: attempts %d restarts %d, want 0 and 4", got.Attempts, got.Restarts)
	}

	// The raw body: a Go duration string, wait optional; empty start body.
	resp, body := f.post(t, fmt.Sprintf("/v1/tasks/%d/start", a.ID), "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"state":"OPEN"`) {
		t.Fatalf("start with an empty body: %d %s", resp.StatusCode, body)
	}
	resp, body = f.post(t, fmt.Sprintf("/v1/tasks/%d/stop", a.ID), `{"reason":"r","deadline":"2s","wait":true}`)
	var sr cks.TaskStopResult
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &sr) != nil || sr.Task.State != cks.TaskStopped {
		t.Fatalf("stop with deadline 2s: %d %s", resp.StatusCode, body)
	}
}

// patch sends PATCH /v1/tasks/{id} as the fixture's admin.
func (f *fixture) patch(t testing.TB, id int64, body string) (int, string) {
	t.Helper()
	return f.do(t, f.token, http.MethodPatch, fmt.Sprintf("/v1/tasks/%d", id), body)
}

func TestTaskControlBadInput(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	ctx := context.Background()
	a, _, _ := c.CreateTask(ctx, cks.NewTask{Type: "t", Title: "a"})
	b, _, _ := c.CreateTask(ctx, cks.NewTask{Type: "t", Title: "b", DependsOn: []int64{a.ID}})
	done, _, _ := c.CreateTask(ctx, cks.NewTask{Type: "done", Title: "done"})
	lease := claimRunning(t, c, "done", "w", done.ID)
	if _, err := c.Complete(ctx, done.ID, lease, false, "ok"); err != nil {
		t.Fatal(err)
	}
	snapshot := func() []cks.Task {
		var out []cks.Task
		for _, id := range []int64{a.ID, b.ID, done.ID} {
			got, err := f.store.Tasks.GetTask(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, got)
		}
		return out
	}
	before := snapshot()
	path := func(id int64, action string) string { return fmt.Sprintf("/v1/tasks/%d/%s", id, action) }
	cases := []struct {
		name, method, path, body string
		status                   int
		field, says              string
	}{
		{"unknown patch field", "PATCH", path(a.ID, ""), `{"acceptance_criteria":"x","colour":"red"}`, 400, "colour", "colour"},
		{"empty patch", "PATCH", path(a.ID, ""), `{}`, 400, "patch", ""},
		{"cycle", "PATCH", path(a.ID, ""), fmt.Sprintf(`{"add_depends_on":[%d]}`, b.ID), 400, "add_depends_on", ""},
		{"self dependency", "PATCH", path(a.ID, ""), fmt.Sprintf(`{"add_depends_on":[%d]}`, a.ID), 400, "add_depends_on", ""},
		{"missing dependency", "PATCH", path(a.ID, ""), `{"add_depends_on":[9999]}`, 400, "add_depends_on", ""},
		{"patch priority type", "PATCH", path(a.ID, ""), `{"priority":"high"}`, 400, "priority", ""},
		{"patch bad deadline", "PATCH", path(a.ID, ""), `{"description":"x","deadline":"soon"}`, 400, "deadline", "soon"},
		{"update terminal", "PATCH", path(done.ID, ""), `{"acceptance_criteria":"x"}`, 409, "", "COMPLETED"},
		{"update unknown task", "PATCH", path(9999, ""), `{"title":"x"}`, 404, "", "9999"},
		{"stop without reason", "POST", path(a.ID, "stop"), `{}`, 400, "reason", ""},
		{"stop bad deadline", "POST", path(a.ID, "stop"), `{"reason":"r","deadline":"-1s"}`, 400, "deadline", ""},
		{"stop deadline number", "POST", path(a.ID, "stop"), `{"reason":"r","deadline":30}`, 400, "deadline", ""},
		{"stop deadline too long", "POST", path(a.ID, "stop"), `{"reason":"r","deadline":"24h"}`, 400, "deadline", ""},
		{"stop unknown field", "POST", path(a.ID, "stop"), `{"reason":"r","force":true}`, 400, "force", ""},
		{"stop completed", "POST", path(done.ID, "stop"), `{"reason":"r"}`, 409, "", "COMPLETED"},
		{"start OPEN", "POST", path(a.ID, "start"), `{}`, 409, "", "OPEN"},
		{"start unknown field", "POST", path(a.ID, "start"), `{"force":true}`, 400, "force", ""},
		{"decision bad revision", "POST", path(a.ID, "decisions"), `{"lease_token":"x","kind":"k","derived_from_revision":1}`, 409, "", "lease"},
		{"confirm without lease", "POST", path(a.ID, "abort/confirm"), `{}`, 400, "lease_token", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.do(t, f.token, tc.method, strings.TrimSuffix(tc.path, "/"), tc.body)
			if status != tc.status {
				t.Fatalf("%s %s %s: %d %s, want %d", tc.method, tc.path, tc.body, status, body, tc.status)
			}
			e := decodeError(t, body)
			if e.Error.Field != tc.field || !strings.Contains(e.Error.Message, tc.says) {
				t.Fatalf("error %+v, want field %q and a message saying %q", e.Error, tc.field, tc.says)
			}
		})
	}
	after := snapshot()
	for i := range before {
		x, y := before[i], after[i]
		if x.State != y.State || x.Revision != y.Revision || x.Restarts != y.Restarts || !x.UpdatedAt.Equal(y.UpdatedAt) ||
			!reflect.DeepEqual(x.DependsOn, y.DependsOn) || len(x.Events) != len(y.Events) || len(x.Aborts) != len(y.Aborts) {
			t.Errorf("refused calls changed task %d: %+v\n→ %+v", x.ID, x, y)
		}
	}
}

// TestStopStartUpdateAreSeparatePermissions: stop does not grant start or
// update, and each of the three allows exactly its own call.
func TestStopStartUpdateAreSeparatePermissions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	task, _, err := f.client().CreateTask(ctx, cks.NewTask{Type: "t", Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	res := auth.TaskResource(task.ID)
	id := fmt.Sprint(task.ID)
	stopper := f.tokenWith(t, cks.Grant{Resource: res, Permission: auth.PermStop})
	if status, body := f.do(t, stopper, "POST", "/v1/tasks/"+id+"/stop", `{"reason":"halt"}`); status != http.StatusOK {
		t.Fatalf("stop with stop: %d %s", status, body)
	}
	status, body := f.do(t, stopper, "POST", "/v1/tasks/"+id+"/start", `{}`)
	wantForbidden(t, status, body, "start", res)
	status, body = f.do(t, stopper, "PATCH", "/v1/tasks/"+id, `{"title":"renamed"}`)
	wantForbidden(t, status, body, "update", res)
	status, body = f.do(t, stopper, "POST", "/v1/tasks/"+id+"/cancel", `{}`)
	wantForbidden(t, status, body, "cancel", res)
	// Stop on another task is not stop on this one.
	other := f.tokenWith(t, cks.Grant{Resource: auth.TaskResource(task.ID + 1), Permission: auth.PermStop})
	status, body = f.do(t, other, "POST", "/v1/tasks/"+id+"/stop", `{"reason":"halt"}`)
	wantForbidden(t, status, body, "stop", res)

	updater := f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermUpdate})
	if status, body := f.do(t, updater, "PATCH", "/v1/tasks/"+id, `{"title":"renamed"}`); status != http.StatusOK {
		t.Fatalf("update with update: %d %s", status, body)
	}
	status, body = f.do(t, updater, "POST", "/v1/tasks/"+id+"/start", `{}`)
	wantForbidden(t, status, body, "start", res)
	starter := f.tokenWith(t, cks.Grant{Resource: res, Permission: auth.PermStart})
	status, body = f.do(t, starter, "POST", "/v1/tasks/"+id+"/stop", `{"reason":"x"}`)
	wantForbidden(t, status, body, "stop", res)
	if status, body := f.do(t, starter, "POST", "/v1/tasks/"+id+"/start", ``); status != http.StatusOK {
		t.Fatalf("start with start: %d %s", status, body)
	}
	got, _ := f.store.Tasks.GetTask(ctx, task.ID)
	if got.State != cks.TaskOpen || got.Title != "renamed" || got.Restarts != 1 {
		t.Fatalf("task after the permitted calls: %s %q restarts %d", got.State, got.Title, got.Restarts)
	}
	// The actor recorded is the principal's name.
	var stopEvent cks.TaskEvent
	for _, ev := range got.Events {
		if ev.To == cks.TaskStopped {
			stopEvent = ev
		}
	}
	if stopEvent.Actor != "p" || stopEvent.Reason == "" {
		t.Fatalf("stop event %+v, want actor p (the principal) and the reason", stopEvent)
	}
}

// TestAbandonedRequestIsNotAHubFailure: a request whose client went away
// (its context is cancelled, as when a CLI gives up during a stop's abort
// wait) is answered 499, not logged and counted as a 500.
func TestAbandonedRequestIsNotAHubFailure(t *testing.T) {
	f := newFixture(t)
	task, _, err := f.client().CreateTask(context.Background(), cks.NewTask{Type: "build", Title: "a"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/stop", task.ID),
		strings.NewReader(`{"reason":"gone"}`))
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	f.api.ServeHTTP(rec, req)
	if rec.Code != 499 {
		t.Fatalf("status %d (%s), want 499", rec.Code, rec.Body)
	}
}
