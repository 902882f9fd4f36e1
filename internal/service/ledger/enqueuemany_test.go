package ledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestTaskBatching: the ledger's batched forms: the bulk
// enqueue (ledger.Service.EnqueueMany) and the claim that starts the task
// (Claim, Running).
func TestTaskBatching(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"TaskEnqueueMany":                  testTaskEnqueueMany,
		"TaskEnqueueManyRefusesWholeBatch": testTaskEnqueueManyRefusesWholeBatch,
		"TaskEnqueueManyDedupe":            testTaskEnqueueManyDedupe,
		"TaskClaimRunning":                 testTaskClaimRunning,
	})
}

// countAll counts every task.
func countAll(t testing.TB, s *backend.Backend) int {
	t.Helper()
	n, err := s.Tasks.CountTasks(ctx(t), cks.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// testTaskEnqueueMany: N items are N tasks, each with its creation event,
// in input order, in the state its dependencies put it in, with its parent.
func testTaskEnqueueMany(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	parent := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "parent"})
	done := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "done", Priority: 1000})
	c := backendtest.MustClaimOne(t, s, "w")
	if c.ID != done.ID {
		t.Fatalf("claimed %d, want %d", c.ID, done.ID)
	}
	if _, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, ""); err != nil {
		t.Fatal(err)
	}
	const n = 50
	ns := make([]cks.NewTask, n)
	for i := range ns {
		ns[i] = cks.NewTask{Type: "bulk", Title: fmt.Sprintf("bulk %d", i), Priority: i % 7, CreatedBy: "filler"}
	}
	ns[3].DependsOn = []int64{parent.ID}    // WAITING: parent is OPEN
	ns[4].DependsOn = []int64{done.ID}      // OPEN: done is COMPLETED
	ns[5].ParentID = &parent.ID             // a child
	ns[6].Payload = []byte(`{"k": [1, 2]}`) // stored as given
	out, err := s.Tasks.EnqueueMany(ctx(t), ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != n {
		t.Fatalf("%d results for %d items", len(out), n)
	}
	for i, ct := range out {
		if !ct.Created || ct.Task.Title != ns[i].Title || ct.Task.Type != "bulk" || ct.Task.Priority != i%7 {
			t.Fatalf("item %d: %+v, want the created task %q", i, ct, ns[i].Title)
		}
		if i > 0 && ct.Task.ID <= out[i-1].Task.ID {
			t.Fatalf("ids out of input order: %d after %d", ct.Task.ID, out[i-1].Task.ID)
		}
	}
	if got := countAll(t, s); got != n+2 {
		t.Fatalf("%d tasks, want %d", got, n+2)
	}
	for i, ct := range out {
		want := cks.TaskOpen
		if i == 3 {
			want = cks.TaskWaiting
		}
		got := backendtest.MustGet(t, s, ct.Task.ID)
		if got.State != want || ct.Task.State != want {
			t.Fatalf("item %d is %s (returned %s), want %s", i, got.State, ct.Task.State, want)
		}
		if len(got.Events) != 1 || got.Events[0].From != "" || got.Events[0].To != want ||
			got.Events[0].Actor != "filler" || !got.Events[0].At.Equal(backendtest.T0) {
			t.Fatalf("item %d events %+v, want one creation event", i, got.Events)
		}
	}
	if got := backendtest.MustGet(t, s, out[3].Task.ID); len(got.DependsOn) != 1 || got.DependsOn[0] != parent.ID {
		t.Fatalf("item 3 depends on %v, want [%d]", got.DependsOn, parent.ID)
	}
	if got := backendtest.MustGet(t, s, out[5].Task.ID); got.ParentID == nil || *got.ParentID != parent.ID {
		t.Fatalf("item 5's parent %v, want %d", got.ParentID, parent.ID)
	}
	if got := backendtest.MustGet(t, s, out[6].Task.ID); !jsonEqual(got.Payload, ns[6].Payload) || !jsonEqual(out[6].Task.Payload, ns[6].Payload) {
		t.Fatalf("item 6's payload %s (returned %s)", got.Payload, out[6].Task.Payload)
	}
	// The waiting item is released by its dependency's completion, as any.
	for {
		ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", N: 10, Lease: backendtest.Lease})
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) == 0 {
			break
		}
		for _, c := range ts {
			if _, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	backendtest.WantState(t, s, out[3].Task.ID, cks.TaskCompleted)
	if out, err := s.Tasks.EnqueueMany(ctx(t), nil); err != nil || len(out) != 0 {
		t.Fatalf("an empty batch: %v, %v", out, err)
	}
}

// testTaskEnqueueManyRefusesWholeBatch: one bad item is a FieldError naming
// it by index, and nothing of the batch is written.
func testTaskEnqueueManyRefusesWholeBatch(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	existing := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "ok"})
	missing := existing.ID + 100
	ok := func(title string) cks.NewTask { return cks.NewTask{Type: "x", Title: title} }
	cases := []struct {
		field string
		bad   cks.NewTask
	}{
		{"tasks[2].type", cks.NewTask{Title: "no type"}},
		{"tasks[2].priority", cks.NewTask{Type: "x", Priority: -1}},
		{"tasks[2].parent_id", cks.NewTask{Type: "x", ParentID: &missing}},
		{"tasks[2].depends_on", cks.NewTask{Type: "x", DependsOn: []int64{existing.ID, missing}}},
		{"tasks[2].dedupe_once", cks.NewTask{Type: "x", DedupeOnce: true}},
	}
	for _, c := range cases {
		_, err := s.Tasks.EnqueueMany(ctx(t), []cks.NewTask{ok("a"), ok("b"), c.bad, ok("d")})
		if !cks.IsFieldError(err, c.field) {
			t.Errorf("EnqueueMany with %+v at 2: err = %v, want a FieldError naming %s", c.bad, err, c.field)
		}
	}
	if got := countAll(t, s); got != 1 {
		t.Fatalf("after refused batches: %d tasks, want only the first", got)
	}
}

// testTaskEnqueueManyDedupe: dedupe keys are decided item by item as
// successive Enqueues would, inside the batch and against existing tasks.
func testTaskEnqueueManyDedupe(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	live := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "live", DedupeKey: "live"})
	finished := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "finished", DedupeKey: "fin"})
	c := backendtest.MustClaimOne(t, s, "w")
	if c.ID != live.ID {
		// Claim order is by priority then age: the first one is live.
		t.Fatalf("claimed %d, want %d", c.ID, live.ID)
	}
	if _, err := s.Tasks.Fail(ctx(t), c.ID, c.LeaseToken, true, "again"); err != nil { // back to OPEN, still live
		t.Fatal(err)
	}
	if _, err := s.Tasks.Cancel(ctx(t), finished.ID, "op", "done with it"); err != nil {
		t.Fatal(err)
	}
	before := countAll(t, s)
	out, err := s.Tasks.EnqueueMany(ctx(t), []cks.NewTask{
		{Type: "x", Title: "0 new", DedupeKey: "new"},
		{Type: "x", Title: "1 existing live", DedupeKey: "live"},
		{Type: "x", Title: "2 same as 0", DedupeKey: "new"},
		{Type: "x", Title: "3 finished, not once: new", DedupeKey: "fin"},
		{Type: "x", Title: "4 once: 3's, live first", DedupeKey: "fin", DedupeOnce: true},
		{Type: "x", Title: "5 no key"},
		{Type: "x", Title: "6 once on a finished key", DedupeKey: "fin-once", DedupeOnce: true},
		{Type: "x", Title: "7 same as 2", DedupeKey: "new", DedupeOnce: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		created bool
		id      int64
	}{
		{true, 0}, {false, live.ID}, {false, out[0].Task.ID}, {true, 0}, {false, out[3].Task.ID}, {true, 0},
		{true, 0}, {false, out[0].Task.ID},
	}
	for i, w := range want {
		got := out[i]
		if got.Created != w.created || (w.id != 0 && got.Task.ID != w.id) {
			t.Errorf("item %d: created %v task %d (%q), want created %v task %d", i, got.Created, got.Task.ID,
				got.Task.Title, w.created, w.id)
		}
	}
	if out[1].Task.Title != "live" || out[2].Task.Title != "0 new" || out[3].Task.ID == finished.ID {
		t.Errorf("hits: %+v", out)
	}
	if got := countAll(t, s); got != before+4 {
		t.Fatalf("%d tasks after the batch, want %d (4 created)", got, before+4)
	}
	// A DedupeOnce item finds the finished task of its key.
	again, err := s.Tasks.EnqueueMany(ctx(t), []cks.NewTask{
		{Type: "x", Title: "once on fin-once again", DedupeKey: "fin-once", DedupeOnce: true},
	})
	if err != nil || again[0].Created || again[0].Task.ID != out[6].Task.ID {
		t.Fatalf("second batch: %+v, %v; want task %d", again, err, out[6].Task.ID)
	}
	if _, err := s.Tasks.Cancel(ctx(t), out[6].Task.ID, "op", "finish it"); err != nil {
		t.Fatal(err)
	}
	after, err := s.Tasks.EnqueueMany(ctx(t), []cks.NewTask{
		{Type: "x", Title: "once, finished", DedupeKey: "fin-once", DedupeOnce: true},
		{Type: "x", Title: "not once: new", DedupeKey: "fin-once"},
		{Type: "x", Title: "once: the new live one", DedupeKey: "fin-once", DedupeOnce: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if after[0].Created || after[0].Task.ID != out[6].Task.ID || after[0].Task.State != cks.TaskCancelled ||
		!after[1].Created || after[2].Created || after[2].Task.ID != after[1].Task.ID {
		t.Fatalf("third batch: %+v", after)
	}
}

// testTaskClaimRunning: a claim with Running leaves each task RUNNING with
// the audit trail of a claim followed by MarkRunning (the same events, in
// order, by the same actor, of the same attempt), under a lease its token
// completes; without it a claim is the plain claim.
func testTaskClaimRunning(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	a := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "r", Title: "two steps", Priority: 2})
	b := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "r", Title: "one step", Priority: 1})
	plain := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "p", Title: "plain"})
	two, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", Types: []string{"r"}, N: 1, Lease: backendtest.Lease})
	if err != nil || len(two) != 1 || two[0].ID != a.ID {
		t.Fatalf("claim: %+v %v", two, err)
	}
	if _, err := s.Tasks.MarkRunning(ctx(t), a.ID, two[0].LeaseToken); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	one, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", Types: []string{"r", "p"}, N: 1, Lease: backendtest.Lease, Running: true})
	if err != nil || len(one) != 1 || one[0].ID != b.ID {
		t.Fatalf("claim running: %+v %v", one, err)
	}
	if c := one[0]; c.State != cks.TaskRunning || c.Attempts != 1 || c.ClaimedBy != "w" || c.LeaseToken == "" ||
		!c.ClaimedAt.Equal(backendtest.T0.Add(time.Second)) || !c.LeaseExpiresAt.Equal(backendtest.T0.Add(time.Second+backendtest.Lease)) {
		t.Fatalf("claimed running: %+v", c.Task)
	}
	ta, tb := backendtest.MustGet(t, s, a.ID), backendtest.MustGet(t, s, b.ID)
	if tb.State != cks.TaskRunning || len(ta.Events) != 3 || len(tb.Events) != 3 {
		t.Fatalf("events %+v and %+v, want three each", ta.Events, tb.Events)
	}
	for i := range ta.Events {
		ea, eb := ta.Events[i], tb.Events[i]
		if ea.From != eb.From || ea.To != eb.To || ea.Actor != eb.Actor || ea.Attempt != eb.Attempt || ea.Reason != eb.Reason {
			t.Errorf("event %d: %+v after a claim and MarkRunning, %+v after a claim with Running", i, ea, eb)
		}
	}
	if e := lastEvent(t, tb); e.From != cks.TaskClaimed || e.To != cks.TaskRunning || !e.At.Equal(backendtest.T0.Add(time.Second)) {
		t.Errorf("last event %+v", e)
	}
	if _, err := s.Tasks.Complete(ctx(t), b.ID, one[0].LeaseToken, false, "done"); err != nil {
		t.Fatal(err)
	}
	backendtest.WantState(t, s, b.ID, cks.TaskCompleted)
	rest, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "v", N: 5, Lease: backendtest.Lease})
	if err != nil || len(rest) != 1 || rest[0].ID != plain.ID || rest[0].State != cks.TaskClaimed {
		t.Fatalf("claim without Running: %+v %v", rest, err)
	}
	if _, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "", N: 1, Lease: backendtest.Lease, Running: true}); !cks.IsFieldError(err, "worker") {
		t.Fatalf("claim running without a worker: %v", err)
	}
}
