package ledger_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestTasks: the task ledger's records and transitions — enqueue, claim
// order, fencing, leases, backoff, dependencies, dedupe, questions,
// review, cancel, listing, evidence, exactly-once completion under
// contention and its notifications — on both backends.
func TestTasks(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"TaskEnqueueAndGet":               testTaskEnqueueAndGet,
		"TaskBadInput":                    testTaskBadInput,
		"TaskNotFound":                    testTaskNotFound,
		"TaskTransitionTable":             testTaskTransitionTable,
		"TaskClaimOrder":                  testTaskClaimOrder,
		"TaskFencing":                     testTaskFencing,
		"TaskTouchRenewsLease":            testTaskTouchRenewsLease,
		"TaskReclaimToFailed":             testTaskReclaimToFailed,
		"TaskBackoffConfigured":           testTaskBackoffConfigured,
		"TaskBackoff":                     testTaskBackoff,
		"TaskDependencies":                testTaskDependencies,
		"TaskDedupe":                      testTaskDedupe,
		"TaskAskAnswer":                   testTaskAskAnswer,
		"TaskReview":                      testTaskReview,
		"TaskCancel":                      testTaskCancel,
		"TaskList":                        testTaskList,
		"TaskEvidencePerAttempt":          testTaskEvidencePerAttempt,
		"TaskExactlyOnce":                 testTaskExactlyOnce,
		"TaskConcurrentDependencyRelease": testTaskConcurrentDependencyRelease,
		"TaskConcurrentDedupe":            testTaskConcurrentDedupe,
		"TasksReadyPublished":             testTasksReadyPublished,
	})
}

func ptr[T any](v T) *T { return &v }

// ctx bounds a test's calls: backendtest.Ctx.
var ctx = backendtest.Ctx

// hasLease reports whether task shows a lease (a holder or an expiry); the
// token itself is never part of a Task.
func hasLease(task cks.Task) bool {
	return task.ClaimedBy != "" || !task.LeaseExpiresAt.IsZero() || !task.LeaseRenewedAt.IsZero()
}

// lastEvent returns the newest event of task.
func lastEvent(t testing.TB, task cks.Task) cks.TaskEvent {
	t.Helper()
	if len(task.Events) == 0 {
		t.Fatalf("task %d has no events", task.ID)
	}
	return task.Events[len(task.Events)-1]
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func testTaskEnqueueAndGet(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	parent := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "plan", Title: "parent"})
	n := cks.NewTask{Type: "build", Title: "t", Description: "d", AcceptanceCriteria: "ac",
		Payload: json.RawMessage(`{"b": [1, 2], "a": "x"}`), Priority: 7, MaxAttempts: 5,
		ParentID: &parent.ID, CreatedBy: "alice"}
	got, created, err := s.Tasks.Enqueue(ctx(t), n)
	if err != nil || !created {
		t.Fatalf("Enqueue: %v, created %v", err, created)
	}
	got = backendtest.MustGet(t, s, got.ID)
	switch {
	case got.ID <= parent.ID, got.Type != "build", got.Title != "t", got.Description != "d",
		got.AcceptanceCriteria != "ac", got.Priority != 7, got.MaxAttempts != 5,
		got.ParentID == nil || *got.ParentID != parent.ID, got.CreatedBy != "alice",
		got.State != cks.TaskOpen, got.Attempts != 0, got.Restarts != 0, got.Revision != 1,
		hasLease(got), got.ClaimedBy != "", !got.RunAfter.IsZero(),
		!got.CreatedAt.Equal(backendtest.T0), !got.UpdatedAt.Equal(backendtest.T0), len(got.DependsOn) != 0:
		t.Fatalf("round trip: %+v", got)
	}
	if !jsonEqual(got.Payload, n.Payload) {
		t.Fatalf("payload %s, want %s", got.Payload, n.Payload)
	}
	e := lastEvent(t, got)
	if len(got.Events) != 1 || e.From != "" || e.To != cks.TaskOpen || e.Actor != "alice" || !e.At.Equal(backendtest.T0) || e.TaskID != got.ID {
		t.Fatalf("creation event %+v", got.Events)
	}
	if !jsonEqual(parent.Payload, []byte(`{}`)) || parent.MaxAttempts != cks.DefaultMaxAttempts {
		t.Fatalf("defaults: payload %s, max attempts %d", parent.Payload, parent.MaxAttempts)
	}
}

func testTaskBadInput(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	existing := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "ok"})
	missing := existing.ID + 100
	cases := []struct {
		field string
		n     cks.NewTask
	}{
		{"type", cks.NewTask{}},
		{"priority", cks.NewTask{Type: "x", Priority: -1}},
		{"priority", cks.NewTask{Type: "x", Priority: cks.MaxPriority + 1}},
		{"max_attempts", cks.NewTask{Type: "x", MaxAttempts: -1}},
		{"max_attempts", cks.NewTask{Type: "x", MaxAttempts: cks.MaxMaxAttempts + 1}},
		{"payload", cks.NewTask{Type: "x", Payload: json.RawMessage(`{not json`)}},
		{"parent_id", cks.NewTask{Type: "x", ParentID: &missing}},
		{"depends_on", cks.NewTask{Type: "x", DependsOn: []int64{existing.ID, missing}}},
		{"depends_on", cks.NewTask{Type: "x", DependsOn: []int64{-3}}},
	}
	for _, c := range cases {
		_, _, err := s.Tasks.Enqueue(ctx(t), c.n)
		var fe *cks.FieldError
		if !errors.Is(err, cks.ErrInvalid) || !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("Enqueue(%+v): err = %v, want a FieldError naming %s", c.n, err, c.field)
		}
		if c.field == "depends_on" && len(c.n.DependsOn) == 2 && !strings.Contains(fmt.Sprint(err), fmt.Sprint(missing)) {
			t.Errorf("missing dependency error %q does not name task %d", err, missing)
		}
	}
	page, err := s.Tasks.ListTasks(ctx(t), cks.TaskFilter{})
	if err != nil || len(page.Tasks) != 1 {
		t.Fatalf("after refused enqueues: %d tasks, %v; want only the first", len(page.Tasks), err)
	}
	claims := []struct {
		field, worker string
		n             int
		lease         time.Duration
	}{
		{"worker", "", 1, backendtest.Lease},
		{"n", "w", 0, backendtest.Lease},
		{"lease_s", "w", 1, -time.Second},
		{"lease_s", "w", 1, time.Millisecond},
		{"lease_s", "w", 1, ledger.MaxLease + time.Second},
	}
	for _, c := range claims {
		_, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: c.worker, N: c.n, Lease: c.lease})
		if !cks.IsFieldError(err, c.field) {
			t.Errorf("Claim(%q, %d, %v): err = %v, want a FieldError naming %s", c.worker, c.n, c.lease, err, c.field)
		}
	}
	filters := []struct {
		field string
		f     cks.TaskFilter
	}{
		{"state", cks.TaskFilter{States: []cks.TaskState{"OPEN", "SLEEPING"}}},
		{"limit", cks.TaskFilter{Limit: -1}},
		{"limit", cks.TaskFilter{Limit: cks.MaxListLimit + 1}},
	}
	for _, c := range filters {
		_, err := s.Tasks.ListTasks(ctx(t), c.f)
		if !cks.IsFieldError(err, c.field) {
			t.Errorf("ListTasks(%+v): err = %v, want a FieldError naming %s", c.f, err, c.field)
		}
	}
}

func testTaskNotFound(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	const id = 424242
	calls := []struct {
		name string
		call func() error
	}{
		{"GetTask", func() error { _, err := s.Tasks.GetTask(ctx(t), id); return err }},
		{"Cancel", func() error { _, err := s.Tasks.Cancel(ctx(t), id, "op", "x"); return err }},
		{"Answer", func() error { _, err := s.Tasks.Answer(ctx(t), id, "op", "x"); return err }},
		{"ClaimReview", func() error { _, err := s.Tasks.ClaimReview(ctx(t), id, "r", backendtest.Lease); return err }},
		{"Complete", func() error { _, err := s.Tasks.Complete(ctx(t), id, "tok", false, ""); return err }},
		{"Heartbeat", func() error { _, err := s.Tasks.Heartbeat(ctx(t), id, "tok"); return err }},
	}
	for _, c := range calls {
		err := c.call()
		if !errors.Is(err, cks.ErrNotFound) || !strings.Contains(err.Error(), fmt.Sprint(id)) {
			t.Errorf("%s(%d): err = %v, want ErrNotFound naming the id", c.name, id, err)
		}
	}
}

// pathTo returns the shortest sequence of allowed transitions from OPEN to
// target (empty for OPEN), or nil when target is unreachable.
func pathTo(target cks.TaskState) []cks.TaskState {
	prev := map[cks.TaskState]cks.TaskState{cks.TaskOpen: ""}
	queue := []cks.TaskState{cks.TaskOpen}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == target {
			var path []cks.TaskState
			for s := cur; s != cks.TaskOpen; s = prev[s] {
				path = append([]cks.TaskState{s}, path...)
			}
			return path
		}
		for _, next := range ledger.All {
			if _, seen := prev[next]; ledger.Allowed(cur, next) && !seen {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// testTaskTransitionTable drives a task into every state through the backend's
// transition function and tries every pair: the allowed ones succeed with an
// event, every illegal one is ErrConflict naming both states and changes
// nothing.
func testTaskTransitionTable(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	into := func(target cks.TaskState) cks.Task {
		t.Helper()
		task := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "to " + string(target)})
		path := pathTo(target)
		if target != cks.TaskOpen && path == nil {
			t.Fatalf("%s is unreachable from OPEN in the table", target)
		}
		for _, st := range path {
			if _, err := ledger.Transition(ctx(t), s.Tasks, task.ID, st, "suite", "setup"); err != nil {
				t.Fatalf("setup of task %d towards %s: %s: %v", task.ID, target, st, err)
			}
		}
		return backendtest.WantState(t, s, task.ID, target)
	}
	for _, from := range ledger.All {
		task := into(from)
		for _, to := range ledger.All {
			if ledger.Allowed(from, to) {
				continue
			}
			_, err := ledger.Transition(ctx(t), s.Tasks, task.ID, to, "suite", "illegal")
			if !errors.Is(err, cks.ErrConflict) || !strings.Contains(err.Error(), string(from)) ||
				!strings.Contains(err.Error(), string(to)) {
				t.Errorf("%s → %s: err = %v, want ErrConflict naming both states", from, to, err)
			}
		}
		after := backendtest.MustGet(t, s, task.ID)
		if after.State != from || len(after.Events) != len(task.Events) || !after.UpdatedAt.Equal(task.UpdatedAt) {
			t.Errorf("illegal transitions from %s changed the task: %+v", from, after)
		}
		for _, to := range ledger.All {
			if !ledger.Allowed(from, to) {
				continue
			}
			task := into(from)
			got, err := ledger.Transition(ctx(t), s.Tasks, task.ID, to, "suite", "legal")
			if err != nil {
				t.Errorf("%s → %s: %v", from, to, err)
				continue
			}
			e := lastEvent(t, backendtest.MustGet(t, s, task.ID))
			if got.State != to || e.From != from || e.To != to || e.Actor != "suite" || e.Reason != "legal" {
				t.Errorf("%s → %s: state %s, event %+v", from, to, got.State, e)
			}
		}
	}
}

func testTaskClaimOrder(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	low := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "low", Priority: 1})
	clk.Advance(time.Second)
	high := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "high", Priority: 9})
	clk.Advance(time.Second)
	high2 := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "high, younger", Priority: 9})
	other := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "review", Title: "other type", Priority: 100})
	parked := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "parked", Priority: 500})
	p := backendtest.MustClaimOne(t, s, "asker")
	if p.ID != parked.ID {
		t.Fatalf("claimed %d, want %d", p.ID, parked.ID)
	}
	if _, err := s.Tasks.RequestInput(ctx(t), p.ID, p.LeaseToken, "?"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	now := clk.Now()
	got, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w1", Types: []string{"build"}, N: 2, Lease: backendtest.Lease})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != high.ID || got[1].ID != high2.ID {
		t.Fatalf("claimed %+v, want [%d %d]", got, high.ID, high2.ID)
	}
	for _, c := range got {
		if c.State != cks.TaskClaimed || c.ClaimedBy != "w1" || !c.ClaimedAt.Equal(now) || c.Attempts != 1 ||
			!c.LeaseExpiresAt.Equal(now.Add(backendtest.Lease)) || len(c.LeaseToken) < 16 {
			t.Fatalf("claimed task %+v", c)
		}
		e := lastEvent(t, backendtest.MustGet(t, s, c.ID))
		if e.From != cks.TaskOpen || e.To != cks.TaskClaimed || e.Actor != "w1" || e.Attempt != 1 {
			t.Fatalf("claim event %+v", e)
		}
	}
	if got[0].LeaseToken == got[1].LeaseToken {
		t.Fatal("two claims share a lease token")
	}
	rest, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w2", Types: []string{"build", "nothing"}, N: 10, Lease: backendtest.Lease})
	if err != nil || len(rest) != 1 || rest[0].ID != low.ID {
		t.Fatalf("second claim = %+v, %v; want only %d (the parked task is excluded)", rest, err, low.ID)
	}
	any, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w3", N: 10, Lease: backendtest.Lease})
	if err != nil || len(any) != 1 || any[0].ID != other.ID {
		t.Fatalf("claim of any type = %+v, %v; want only %d", any, err, other.ID)
	}
	backendtest.WantState(t, s, parked.ID, cks.TaskNeedsInput)
}

// testTaskFencing: an executor whose lease was reclaimed cannot write, and the
// task's result is the second executor's.
func testTaskFencing(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	task := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "fenced"})
	a := backendtest.MustClaimOne(t, s, "A")
	if _, err := s.Tasks.MarkRunning(ctx(t), a.ID, a.LeaseToken); err != nil {
		t.Fatal(err)
	}
	clk.Advance(backendtest.Lease)
	n, err := s.Tasks.ReclaimExpired(ctx(t), clk.Now())
	if err != nil || n != 1 {
		t.Fatalf("ReclaimExpired = %d, %v; want 1", n, err)
	}
	reopened := backendtest.WantState(t, s, task.ID, cks.TaskOpen)
	if e := lastEvent(t, reopened); e.From != cks.TaskRunning || e.Actor != "reaper" || reopened.Attempts != 1 || hasLease(reopened) {
		t.Fatalf("reclaimed task %+v, event %+v", reopened, e)
	}
	b := backendtest.MustClaimOne(t, s, "B")
	if b.Attempts != 2 || b.LeaseToken == a.LeaseToken {
		t.Fatalf("second claim %+v", b)
	}
	zombie := []struct {
		name string
		call func() error
	}{
		{"Complete", func() error { _, err := s.Tasks.Complete(ctx(t), a.ID, a.LeaseToken, false, "A"); return err }},
		{"Fail", func() error { _, err := s.Tasks.Fail(ctx(t), a.ID, a.LeaseToken, true, "A"); return err }},
		{"MarkRunning", func() error { _, err := s.Tasks.MarkRunning(ctx(t), a.ID, a.LeaseToken); return err }},
		{"AddEvidence", func() error { _, err := s.Tasks.AddEvidence(ctx(t), a.ID, a.LeaseToken, "log", "A"); return err }},
		{"RequestInput", func() error { _, err := s.Tasks.RequestInput(ctx(t), a.ID, a.LeaseToken, "A?"); return err }},
		{"Complete empty token", func() error { _, err := s.Tasks.Complete(ctx(t), a.ID, "", false, "A"); return err }},
	}
	for _, z := range zombie {
		backendtest.WantErr(t, "zombie "+z.name, z.call(), cks.ErrLeaseLost)
	}
	res, err := s.Tasks.Heartbeat(ctx(t), a.ID, a.LeaseToken)
	if res.Held || err != nil {
		t.Fatalf("zombie Heartbeat = %+v, %v; want not held", res, err)
	}
	done, err := s.Tasks.Complete(ctx(t), b.ID, b.LeaseToken, false, "B")
	if err != nil || done.State != cks.TaskCompleted || hasLease(done) {
		t.Fatalf("B's Complete = %+v, %v", done, err)
	}
	_, err = s.Tasks.Complete(ctx(t), a.ID, a.LeaseToken, false, "A")
	backendtest.WantErr(t, "zombie Complete after B", err, cks.ErrLeaseLost)
	_, err = s.Tasks.Complete(ctx(t), b.ID, b.LeaseToken, false, "B again")
	backendtest.WantErr(t, "second Complete by B", err, cks.ErrLeaseLost)
	final := backendtest.WantState(t, s, task.ID, cks.TaskCompleted)
	if final.Result != "B" {
		t.Fatalf("result = %q, want B's", final.Result)
	}
}

func testTaskTouchRenewsLease(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	backendtest.MustEnqueue(t, s, cks.NewTask{Title: "long"})
	c := backendtest.MustClaimOne(t, s, "w")
	clk.Advance(50 * time.Second)
	res, err := s.Tasks.Heartbeat(ctx(t), c.ID, c.LeaseToken)
	if !res.Held || err != nil {
		t.Fatalf("Heartbeat = %v, %v", res.Held, err)
	}
	got := backendtest.MustGet(t, s, c.ID)
	if !got.LeaseExpiresAt.Equal(clk.Now().Add(backendtest.Lease)) || !got.LeaseRenewedAt.Equal(clk.Now()) {
		t.Fatalf("after touch: expires %v renewed %v, now %v", got.LeaseExpiresAt, got.LeaseRenewedAt, clk.Now())
	}
	clk.Advance(50 * time.Second) // past the original expiry, within the renewed one
	if n, err := s.Tasks.ReclaimExpired(ctx(t), clk.Now()); n != 0 || err != nil {
		t.Fatalf("reclaim of a renewed lease = %d, %v", n, err)
	}
	clk.Advance(10 * time.Second) // the renewed lease has run out: reclaimed at once, no grace
	if n, err := s.Tasks.ReclaimExpired(ctx(t), clk.Now()); n != 1 || err != nil {
		t.Fatalf("reclaim of the renewed lease once it expired = %d, %v", n, err)
	}
	backendtest.WantState(t, s, c.ID, cks.TaskOpen)
}

func testTaskReclaimToFailed(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	task := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "flaky", MaxAttempts: 2})
	dependant := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "after", DependsOn: []int64{task.ID}})
	for attempt := 1; attempt <= 2; attempt++ {
		c := backendtest.MustClaimOne(t, s, fmt.Sprintf("w%d", attempt))
		if c.Attempts != attempt {
			t.Fatalf("attempt %d: claim says %d", attempt, c.Attempts)
		}
		clk.Advance(backendtest.Lease + time.Second)
		if n, err := s.Tasks.ReclaimExpired(ctx(t), clk.Now()); n != 1 || err != nil {
			t.Fatalf("attempt %d: reclaim = %d, %v", attempt, n, err)
		}
	}
	got := backendtest.WantState(t, s, task.ID, cks.TaskFailed)
	if e := lastEvent(t, got); e.Reason != "max attempts" || got.LastError != "max attempts" || got.Attempts != 2 {
		t.Fatalf("dead letter: %+v, event %+v", got, e)
	}
	if ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", N: 5, Lease: backendtest.Lease}); err != nil || len(ts) != 0 {
		t.Fatalf("claim after dead letter = %+v, %v", ts, err)
	}
	blocked := backendtest.WantState(t, s, dependant.ID, cks.TaskBlocked)
	if !strings.Contains(blocked.LastError, "max attempts") {
		t.Fatalf("blocked dependant's reason %q", blocked.LastError)
	}
}

// testTaskBackoffConfigured: CKS_RETRY_BACKOFF is the delay after the
// first failed attempt, doubling with each further one (plus up to a
// quarter of jitter); 0 retries at once.
func testTaskBackoffConfigured(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	set, err := config.ParseLedger(func(k string) string { return map[string]string{config.EnvRetryBackoff: "10"}[k] })
	if err != nil || s.Tasks.Configure(set) != nil {
		t.Fatalf("CKS_RETRY_BACKOFF=10: %+v, %v", set, err)
	}
	backendtest.MustEnqueue(t, s, cks.NewTask{Type: "b", MaxAttempts: 5})
	for attempt, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		c := backendtest.ClaimType(t, s, "w", "b")
		got, err := s.Tasks.Fail(ctx(t), c.ID, c.LeaseToken, true, "transient")
		if err != nil {
			t.Fatal(err)
		}
		if wait := got.RunAfter.Sub(clk.Now()); wait < want || wait > want+want/4 {
			t.Fatalf("attempt %d: run_after %s after the failure, want %s to %s", attempt+1, wait, want, want+want/4)
		}
		clk.Set(got.RunAfter)
	}
	if err := s.Tasks.Configure(ledger.Settings{DefaultLease: ledger.DefaultLease, RetryBackoff: 0}); err != nil {
		t.Fatal(err)
	}
	c := backendtest.ClaimType(t, s, "w", "b")
	if got, err := s.Tasks.Fail(ctx(t), c.ID, c.LeaseToken, true, "transient"); err != nil || got.RunAfter.After(clk.Now()) {
		t.Fatalf("CKS_RETRY_BACKOFF=0: run_after %s, now %s, %v; want at once", got.RunAfter, clk.Now(), err)
	}
	backendtest.ClaimType(t, s, "w", "b") // claimable at once
}

func testTaskBackoff(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	task := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "retry", MaxAttempts: 2})
	c := backendtest.MustClaimOne(t, s, "w")
	got, err := s.Tasks.Fail(ctx(t), c.ID, c.LeaseToken, true, "transient")
	if err != nil || got.State != cks.TaskOpen || got.LastError != "transient" || hasLease(got) {
		t.Fatalf("retryable Fail = %+v, %v", got, err)
	}
	now := clk.Now()
	// The first retry waits BackoffBase plus up to BackoffJitter of it.
	lo, hi := now.Add(ledger.BackoffBase), now.Add(ledger.BackoffBase+time.Duration(ledger.BackoffJitter*float64(ledger.BackoffBase)))
	if got.RunAfter.Before(lo) || got.RunAfter.After(hi) {
		t.Fatalf("run_after %v not in [%v, %v]", got.RunAfter, lo, hi)
	}
	if ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", N: 1, Lease: backendtest.Lease}); err != nil || len(ts) != 0 {
		t.Fatalf("claim before run_after = %+v, %v", ts, err)
	}
	clk.Set(hi)
	c = backendtest.MustClaimOne(t, s, "w")
	if c.Attempts != 2 || !c.RunAfter.IsZero() {
		t.Fatalf("retry claim %+v", c)
	}
	got, err = s.Tasks.Fail(ctx(t), c.ID, c.LeaseToken, true, "again")
	if err != nil || got.State != cks.TaskFailed || got.LastError != "max attempts: again" {
		t.Fatalf("exhausted Fail = %+v, %v", got, err)
	}
	other := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "permanent"})
	c = backendtest.MustClaimOne(t, s, "w")
	if c.ID != other.ID {
		t.Fatalf("claimed %d, want %d", c.ID, other.ID)
	}
	got, err = s.Tasks.Fail(ctx(t), c.ID, c.LeaseToken, false, "bad input")
	if err != nil || got.State != cks.TaskFailed || got.LastError != "bad input" || got.Attempts != 1 {
		t.Fatalf("permanent Fail = %+v, %v", got, err)
	}
	backendtest.WantState(t, s, task.ID, cks.TaskFailed)
}

func testTaskDependencies(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	a := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "a", Priority: 10})
	b := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "b", Priority: 5})
	c := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "c", DependsOn: []int64{a.ID, b.ID, a.ID}})
	if c.State != cks.TaskWaiting || !slices.Equal(c.DependsOn, []int64{a.ID, b.ID}) {
		t.Fatalf("c = %s deps %v, want WAITING on [%d %d]", c.State, c.DependsOn, a.ID, b.ID)
	}
	d := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "d", DependsOn: []int64{c.ID}})
	e := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "e", DependsOn: []int64{d.ID}})
	child := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "child", ParentID: &c.ID})
	if child.State != cks.TaskOpen || *child.ParentID != c.ID {
		t.Fatalf("child %+v", child)
	}
	if _, err := s.Tasks.Cancel(ctx(t), child.ID, "op", "not needed"); err != nil {
		t.Fatal(err)
	}

	ca := backendtest.MustClaimOne(t, s, "w")
	if ca.ID != a.ID {
		t.Fatalf("claimed %d, want a=%d (waiting tasks are not claimable)", ca.ID, a.ID)
	}
	if _, err := s.Tasks.Complete(ctx(t), a.ID, ca.LeaseToken, false, "ok"); err != nil {
		t.Fatal(err)
	}
	backendtest.WantState(t, s, c.ID, cks.TaskWaiting)
	cb := backendtest.MustClaimOne(t, s, "w")
	if _, err := s.Tasks.Complete(ctx(t), cb.ID, cb.LeaseToken, false, "ok"); err != nil {
		t.Fatal(err)
	}
	released := backendtest.WantState(t, s, c.ID, cks.TaskOpen)
	if ev := lastEvent(t, released); ev.From != cks.TaskWaiting || ev.Actor != "ledger" {
		t.Fatalf("release event %+v", ev)
	}
	backendtest.WantState(t, s, d.ID, cks.TaskWaiting)
	if late := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "late", DependsOn: []int64{a.ID}}); late.State != cks.TaskOpen {
		t.Fatalf("task on a completed dependency starts %s, want OPEN", late.State)
	}

	cc := backendtest.MustClaimOne(t, s, "w")
	if cc.ID != c.ID {
		t.Fatalf("claimed %d, want c=%d", cc.ID, c.ID)
	}
	if _, err := s.Tasks.Fail(ctx(t), c.ID, cc.LeaseToken, false, "broken"); err != nil {
		t.Fatal(err)
	}
	bd := backendtest.WantState(t, s, d.ID, cks.TaskBlocked)
	be := backendtest.WantState(t, s, e.ID, cks.TaskBlocked)
	if !strings.Contains(bd.LastError, "broken") || !strings.Contains(lastEvent(t, bd).Reason, fmt.Sprint(c.ID)) ||
		!strings.Contains(be.LastError, fmt.Sprint(d.ID)) {
		t.Fatalf("blocked reasons: d %q, e %q", bd.LastError, be.LastError)
	}
	if f := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "f", DependsOn: []int64{c.ID}}); f.State != cks.TaskBlocked {
		t.Fatalf("task on a failed dependency starts %s, want BLOCKED", f.State)
	}
	if g := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "g", DependsOn: []int64{child.ID}}); g.State != cks.TaskBlocked {
		t.Fatalf("task on a cancelled dependency starts %s, want BLOCKED", g.State)
	}
	// Cancelling a dependency blocks its waiting dependants too.
	h := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "h"})
	i := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "i", DependsOn: []int64{h.ID}})
	if _, err := s.Tasks.Cancel(ctx(t), h.ID, "op", "dropped"); err != nil {
		t.Fatal(err)
	}
	backendtest.WantState(t, s, i.ID, cks.TaskBlocked)
}

func testTaskDedupe(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	first, created, err := s.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "sweep", Title: "one", DedupeKey: "k"})
	if err != nil || !created {
		t.Fatal(err)
	}
	again, created, err := s.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "sweep", Title: "two", DedupeKey: "k"})
	if err != nil || created || again.ID != first.ID || again.Title != "one" {
		t.Fatalf("second enqueue = %+v, created %v, %v; want the first task", again, created, err)
	}
	other, created, err := s.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "sweep", Title: "other", DedupeKey: "k2"})
	if err != nil || !created || other.ID == first.ID {
		t.Fatalf("other key = %+v, %v", other, err)
	}
	c := backendtest.MustClaimOne(t, s, "w")
	if _, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, ""); err != nil {
		t.Fatal(err)
	}
	// DedupeOnce: the finished task still holds its key.
	once, created, err := s.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "sweep", Title: "once", DedupeKey: "k", DedupeOnce: true})
	if err != nil || created || once.ID != first.ID || once.State != cks.TaskCompleted {
		t.Fatalf("dedupe-once enqueue after the first completed = %+v, created %v, %v; want the completed first task", once, created, err)
	}
	next, created, err := s.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "sweep", Title: "three", DedupeKey: "k"})
	if err != nil || !created || next.ID == first.ID {
		t.Fatalf("enqueue after the first completed = %+v, created %v, %v; want a new task", next, created, err)
	}
	// With a live and a finished task of the key, the live one is returned.
	live, created, err := s.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "sweep", Title: "four", DedupeKey: "k", DedupeOnce: true})
	if err != nil || created || live.ID != next.ID {
		t.Fatalf("dedupe-once with a live task = %+v, created %v, %v; want task %d", live, created, err, next.ID)
	}
	if _, _, err := s.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "sweep", DedupeOnce: true}); !cks.IsFieldError(err, "dedupe_once") {
		t.Fatalf("dedupe_once without a key: %v", err)
	}
}

func testTaskAskAnswer(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	task := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "ask"})
	c := backendtest.MustClaimOne(t, s, "w")
	if _, err := s.Tasks.AddEvidence(ctx(t), c.ID, c.LeaseToken, "note", "before asking"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tasks.RequestInput(ctx(t), c.ID, c.LeaseToken, ""); !cks.IsFieldError(err, "question") {
		t.Fatalf("empty question: %v", err)
	}
	parked, err := s.Tasks.RequestInput(ctx(t), c.ID, c.LeaseToken, "which region?")
	if err != nil || parked.State != cks.TaskNeedsInput || parked.Question != "which region?" ||
		hasLease(parked) || parked.Attempts != 0 {
		t.Fatalf("RequestInput = %+v, %v", parked, err)
	}
	if e := lastEvent(t, backendtest.MustGet(t, s, task.ID)); e.To != cks.TaskNeedsInput || e.Attempt != 1 {
		t.Fatalf("ask event %+v", e)
	}
	_, err = s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, "x")
	backendtest.WantErr(t, "Complete of a parked task", err, cks.ErrLeaseLost)
	if ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w2", N: 5, Lease: backendtest.Lease}); err != nil || len(ts) != 0 {
		t.Fatalf("claim of a parked task = %+v, %v", ts, err)
	}
	if _, err := s.Tasks.Answer(ctx(t), task.ID, "op", ""); !cks.IsFieldError(err, "text") {
		t.Fatalf("empty answer: %v", err)
	}
	answered, err := s.Tasks.Answer(ctx(t), task.ID, "op", "eu-west")
	if err != nil || answered.State != cks.TaskOpen || answered.Answer != "eu-west" || answered.Question != "which region?" {
		t.Fatalf("Answer = %+v, %v", answered, err)
	}
	_, err = s.Tasks.Answer(ctx(t), task.ID, "op", "again")
	if !errors.Is(err, cks.ErrConflict) || !strings.Contains(err.Error(), "OPEN") {
		t.Fatalf("Answer of an OPEN task: %v, want ErrConflict naming OPEN", err)
	}
	again := backendtest.MustClaimOne(t, s, "w2")
	if again.Attempts != 1 {
		t.Fatalf("claim after answer: attempts %d, want 1 (asking burns no attempt)", again.Attempts)
	}
	if cur := backendtest.MustGet(t, s, task.ID).CurrentEvidence(); len(cur) != 1 || cur[0].Body != "before asking" {
		t.Fatalf("current evidence after answer %+v", cur)
	}
}

func testTaskReview(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	task := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "reviewed"})
	dep := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "after review", DependsOn: []int64{task.ID}})
	c := backendtest.MustClaimOne(t, s, "w")
	got, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, true, "draft 1")
	if err != nil || got.State != cks.TaskNeedsReview || got.Result != "draft 1" || hasLease(got) {
		t.Fatalf("Complete(needsReview) = %+v, %v", got, err)
	}
	backendtest.WantState(t, s, dep.ID, cks.TaskWaiting)
	if _, err := s.Tasks.ClaimReview(ctx(t), dep.ID, "rev", backendtest.Lease); !errors.Is(err, cks.ErrConflict) {
		t.Fatalf("ClaimReview of a WAITING task: %v", err)
	}
	r, err := s.Tasks.ClaimReview(ctx(t), task.ID, "rev", backendtest.Lease)
	if err != nil || r.State != cks.TaskReviewing || r.ClaimedBy != "rev" || r.LeaseToken == "" {
		t.Fatalf("ClaimReview = %+v, %v", r, err)
	}
	_, err = s.Tasks.Approve(ctx(t), task.ID, "wrong", "lgtm")
	backendtest.WantErr(t, "Approve with a wrong token", err, cks.ErrLeaseLost)
	rej, err := s.Tasks.Reject(ctx(t), task.ID, r.LeaseToken, "missing tests")
	if err != nil || rej.State != cks.TaskOpen || rej.ReviewNote != "missing tests" || hasLease(rej) {
		t.Fatalf("Reject = %+v, %v", rej, err)
	}
	if e := lastEvent(t, backendtest.MustGet(t, s, task.ID)); e.From != cks.TaskReviewing || e.To != cks.TaskOpen ||
		e.Actor != "rev" || !strings.Contains(e.Reason, "missing tests") {
		t.Fatalf("reject event %+v", e)
	}
	c = backendtest.MustClaimOne(t, s, "w")
	if c.Attempts != 2 {
		t.Fatalf("claim after reject: attempts %d, want 2", c.Attempts)
	}
	if _, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, true, "draft 2"); err != nil {
		t.Fatal(err)
	}
	gone, err := s.Tasks.ClaimReview(ctx(t), task.ID, "rev-gone", backendtest.Lease)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(backendtest.Lease)
	if n, err := s.Tasks.ReclaimExpired(ctx(t), clk.Now()); n != 1 || err != nil {
		t.Fatalf("reclaim of an abandoned review = %d, %v", n, err)
	}
	if back := backendtest.WantState(t, s, task.ID, cks.TaskNeedsReview); hasLease(back) || back.Attempts != 2 {
		t.Fatalf("abandoned review back in the queue: %+v", back)
	}
	_, err = s.Tasks.Approve(ctx(t), task.ID, gone.LeaseToken, "late")
	backendtest.WantErr(t, "Approve after the review lease was reclaimed", err, cks.ErrLeaseLost)
	r, err = s.Tasks.ClaimReview(ctx(t), task.ID, "rev2", backendtest.Lease)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := s.Tasks.Approve(ctx(t), task.ID, r.LeaseToken, "lgtm")
	if err != nil || ok.State != cks.TaskCompleted || ok.Result != "draft 2" || ok.ReviewNote != "lgtm" {
		t.Fatalf("Approve = %+v, %v", ok, err)
	}
	backendtest.WantState(t, s, dep.ID, cks.TaskOpen)
}

func testTaskCancel(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	task := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "doomed"})
	c := backendtest.MustClaimOne(t, s, "w")
	if _, err := s.Tasks.MarkRunning(ctx(t), c.ID, c.LeaseToken); err != nil {
		t.Fatal(err)
	}
	got, err := s.Tasks.Cancel(ctx(t), task.ID, "op", "no longer wanted")
	if err != nil || got.State != cks.TaskCancelled || hasLease(got) {
		t.Fatalf("Cancel = %+v, %v", got, err)
	}
	if e := lastEvent(t, backendtest.MustGet(t, s, task.ID)); e.From != cks.TaskRunning || e.Actor != "op" || e.Reason != "no longer wanted" {
		t.Fatalf("cancel event %+v", e)
	}
	res, err := s.Tasks.Heartbeat(ctx(t), c.ID, c.LeaseToken)
	if res.Held || err != nil {
		t.Fatalf("Heartbeat after cancel = %+v, %v; want not held", res, err)
	}
	_, err = s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, "late")
	backendtest.WantErr(t, "Complete after cancel", err, cks.ErrLeaseLost)
	_, err = s.Tasks.Cancel(ctx(t), task.ID, "op", "twice")
	if !errors.Is(err, cks.ErrConflict) || !strings.Contains(err.Error(), "CANCELLED") {
		t.Fatalf("second Cancel: %v, want ErrConflict naming CANCELLED", err)
	}
	if final := backendtest.MustGet(t, s, task.ID); final.Result != "" || len(final.Events) != 4 {
		t.Fatalf("after refused writes: %+v", final)
	}
}

func testTaskList(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	var ids []int64
	for i := range 7 {
		typ := "a"
		if i%2 == 1 {
			typ = "b"
		}
		ids = append(ids, backendtest.MustEnqueue(t, s, cks.NewTask{Type: typ, Title: fmt.Sprint(i)}).ID)
	}
	c, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", Types: []string{"b"}, N: 1, Lease: backendtest.Lease})
	if err != nil || len(c) != 1 {
		t.Fatal(err)
	}
	var seen []int64
	var cursor int64
	for pages := 0; ; pages++ {
		page, err := s.Tasks.ListTasks(ctx(t), cks.TaskFilter{After: cursor, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range page.Tasks {
			seen = append(seen, task.ID)
			if task.Events != nil {
				t.Fatal("ListTasks returned events")
			}
		}
		if page.Next == 0 {
			if pages != 2 {
				t.Fatalf("%d pages, want 3", pages+1)
			}
			break
		}
		cursor = page.Next
	}
	if !slices.Equal(seen, ids) {
		t.Fatalf("paged ids %v, want %v", seen, ids)
	}
	cases := []struct {
		f    cks.TaskFilter
		want []int64
	}{
		{cks.TaskFilter{Types: []string{"b"}}, []int64{ids[1], ids[3], ids[5]}},
		{cks.TaskFilter{States: []cks.TaskState{cks.TaskClaimed}}, []int64{c[0].ID}},
		{cks.TaskFilter{States: []cks.TaskState{cks.TaskOpen}, Types: []string{"b"}}, []int64{ids[3], ids[5]}},
		{cks.TaskFilter{Types: []string{"a"}, After: ids[2]}, []int64{ids[4], ids[6]}},
		{cks.TaskFilter{Types: []string{"none"}}, nil},
	}
	for _, tc := range cases {
		page, err := s.Tasks.ListTasks(ctx(t), tc.f)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, task := range page.Tasks {
			got = append(got, task.ID)
		}
		if !slices.Equal(got, tc.want) || page.Next != 0 {
			t.Errorf("ListTasks(%+v) = %v next %d, want %v", tc.f, got, page.Next, tc.want)
		}
	}
}

func testTaskEvidencePerAttempt(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	task := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "evidence"})
	c := backendtest.MustClaimOne(t, s, "w1")
	if _, err := s.Tasks.AddEvidence(ctx(t), c.ID, c.LeaseToken, "", "x"); !cks.IsFieldError(err, "kind") {
		t.Fatalf("empty kind: %v", err)
	}
	ev, err := s.Tasks.AddEvidence(ctx(t), c.ID, c.LeaseToken, "plan_decomposed", "first")
	if err != nil || ev.Attempt != 1 || ev.Revision != 1 || ev.Actor != "w1" || ev.ID == 0 {
		t.Fatalf("AddEvidence = %+v, %v", ev, err)
	}
	clk.Advance(backendtest.Lease)
	if _, err := s.Tasks.ReclaimExpired(ctx(t), clk.Now()); err != nil {
		t.Fatal(err)
	}
	c = backendtest.MustClaimOne(t, s, "w2")
	if _, err := s.Tasks.AddEvidence(ctx(t), c.ID, c.LeaseToken, "decision", "second"); err != nil {
		t.Fatal(err)
	}
	got := backendtest.MustGet(t, s, task.ID)
	if len(got.History) != 1 || got.History[0].Attempt != 1 || len(got.History[0].Evidence) != 1 ||
		got.History[0].Evidence[0].Body != "first" || got.History[0].Aborted {
		t.Fatalf("history %+v", got.History)
	}
	if got.Current == nil || got.Current.Attempt != 2 {
		t.Fatalf("current %+v", got.Current)
	}
	if cur := got.CurrentEvidence(); len(cur) != 1 || cur[0].Body != "second" {
		t.Fatalf("current evidence %+v", cur)
	}
}

// testTaskConcurrentDependencyRelease completes the two dependencies of each
// of many tasks at the same time from two handles: whichever completion
// commits second must see the first and release the dependant.
func testTaskConcurrentDependencyRelease(t *testing.T, open backendtest.Opener) {
	const n = 40
	s, clk := backendtest.FakeStore(t, open)
	var dependants []int64
	for i := range n {
		a := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "a", Title: fmt.Sprint("a", i)})
		b := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "b", Title: fmt.Sprint("b", i)})
		dependants = append(dependants, backendtest.MustEnqueue(t, s, cks.NewTask{Type: "d", DependsOn: []int64{a.ID, b.ID}}).ID)
	}
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for _, typ := range []string{"a", "b"} {
		h := open(t, driver.WithClock(clk))
		wg.Go(func() {
			for {
				ts, err := h.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w-" + typ, Types: []string{typ}, N: 1, Lease: backendtest.Lease})
				if err != nil || len(ts) == 0 {
					errs <- err
					return
				}
				if _, err := h.Tasks.Complete(ctx(t), ts[0].ID, ts[0].LeaseToken, false, ""); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range dependants {
		backendtest.WantState(t, s, id, cks.TaskOpen)
	}
}

// testTaskConcurrentDedupe enqueues one dedupe key from many handles at once:
// exactly one task is created and every caller gets it.
func testTaskConcurrentDedupe(t *testing.T, open backendtest.Opener) {
	const n = 8
	handles := make([]*backend.Backend, n)
	for i := range handles {
		handles[i], _ = backendtest.FakeStore(t, open)
	}
	ids := make([]int64, n)
	created := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, h := range handles {
		wg.Go(func() {
			var task cks.Task
			task, created[i], errs[i] = h.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "sweep", DedupeKey: "same"})
			ids[i] = task.ID
		})
	}
	wg.Wait()
	made := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("enqueue %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("enqueues returned tasks %v, want one task", ids)
		}
		if created[i] {
			made++
		}
	}
	if made != 1 {
		t.Fatalf("%d enqueues report creating the task, want 1", made)
	}
	if page, err := handles[0].Tasks.ListTasks(ctx(t), cks.TaskFilter{}); err != nil || len(page.Tasks) != 1 {
		t.Fatalf("%d tasks, %v; want 1", len(page.Tasks), err)
	}
}

// testTasksReadyPublished: every write that makes a task OPEN wakes watchers
// of TopicTasksReady on other handles; one that makes none OPEN does not.
func testTasksReadyPublished(t *testing.T, open backendtest.Opener) {
	s := open(t)
	w := backendtest.Watch(t, open(t, driver.WithChangePollInterval(backendtest.FastPoll)), cks.TopicTasksReady)
	w.Ready(t, cks.TopicTasksReady)
	dep := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "dep"}) // OPEN
	if got := w.Next(t); got != cks.TopicTasksReady {
		t.Fatalf("enqueue woke %q", got)
	}
	waiting := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "waiting", DependsOn: []int64{dep.ID}})
	if waiting.State != "WAITING" {
		t.Fatalf("setup: %s", waiting.State)
	}
	c := backendtest.MustClaimOne(t, s, "w") // OPEN → CLAIMED: nothing became OPEN
	w.Quiet(t)
	if _, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, "ok"); err != nil { // releases waiting
		t.Fatal(err)
	}
	if got := w.Next(t); got != cks.TopicTasksReady {
		t.Fatalf("release woke %q", got)
	}
}
