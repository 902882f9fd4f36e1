package ledger_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/service/ledger"
)

var updateHistories = flag.Bool("update-histories", false, "rewrite testdata/histories.golden from this run (SQLite)")

// historiesGolden are the histories the schema of one event row per move
// recorded (main before issue 27), walked by walkHistories.
var historiesGolden = filepath.Join("testdata", "histories.golden")

// TestHistoriesReadAsBefore walks every path of the state machine on both
// dialects and compares each task's history (GetTask's events, ids aside)
// with the one the old schema recorded, event for event: the history
// synthesised from the task row, its attempt rows and its events reads
// exactly as the one-row-per-move history did (issue 27).
func TestHistoriesReadAsBefore(t *testing.T) {
	want, err := os.ReadFile(historiesGolden)
	if err != nil && !*updateHistories {
		t.Fatal(err)
	}
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s, clk := backendtest.FakeStore(t, open)
		got := walkHistories(t, s, clk)
		if *updateHistories && strings.HasSuffix(t.Name(), "sqlite") {
			if err := os.WriteFile(historiesGolden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		if got != string(want) {
			t.Errorf("histories differ from %s:\n%s", historiesGolden, lineDiff(string(want), got))
		}
	})
}

// lineDiff lists the lines of want and got that differ, by line number.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %s\n  got  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// walkHistories takes tasks through each path of the state machine, through
// the service's operations, and renders the history of every task it made.
// The clock moves on a second between most steps; some paths make all their
// moves in one instant, so that the order of a history cannot rest on times.
func walkHistories(t *testing.T, s *backend.Backend, clk *clock.Fake) string {
	t.Helper()
	c := backendtest.Ctx(t)
	tasks := s.Tasks
	tick := func() { clk.Advance(time.Second) }
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	var b strings.Builder
	// claim claims the one OPEN task of typ for worker (running: moved on
	// to RUNNING in the claim).
	claim := func(typ, worker string, running bool) cks.ClaimedTask {
		t.Helper()
		cs, err := tasks.Claim(c, ledger.ClaimParams{Worker: worker, Types: []string{typ}, N: 1,
			Lease: backendtest.Lease, Running: running})
		must("claim "+typ, err)
		if len(cs) != 1 {
			t.Fatalf("claim %s: %d tasks, want 1", typ, len(cs))
		}
		return cs[0]
	}
	enqueue := func(n cks.NewTask) cks.Task {
		t.Helper()
		if n.Title == "" {
			n.Title = n.Type
		}
		return backendtest.MustEnqueue(t, s, n)
	}
	show := func(path string, id int64) {
		t.Helper()
		task := backendtest.MustGet(t, s, id)
		fmt.Fprintf(&b, "%s: task %d %s\n", path, id, task.State)
		for _, e := range task.Events {
			if e.TaskID != id {
				t.Fatalf("task %d has an event of task %d", id, e.TaskID)
			}
			fmt.Fprintf(&b, "  +%s %s %s→%s attempt %d %q", e.At.Sub(backendtest.T0), e.Actor, e.From, e.To, e.Attempt, e.Reason)
			for _, ch := range e.Changes {
				fmt.Fprintf(&b, " [%s: %s → %s]", ch.Field, ch.Old, ch.New)
			}
			b.WriteString("\n")
		}
	}
	str := func(v string) *string { return &v }
	num := func(v int) *int { return &v }

	// A plain task: claimed, started, completed.
	{
		id := enqueue(cks.NewTask{Type: "plain"}).ID
		tick()
		ct := claim("plain", "w1", false)
		tick()
		_, err := tasks.MarkRunning(c, id, ct.LeaseToken)
		must("running", err)
		tick()
		_, err = tasks.Complete(c, id, ct.LeaseToken, false, "done")
		must("complete", err)
		show("complete", id)
	}
	// Claimed straight into RUNNING, completed without a start of its own.
	{
		id := enqueue(cks.NewTask{Type: "direct", CreatedBy: "alice"}).ID
		tick()
		ct := claim("direct", "w1", true)
		tick()
		_, err := tasks.Complete(c, id, ct.LeaseToken, false, "done")
		must("complete", err)
		show("claim-running", id)
	}
	// Completed from CLAIMED, never started.
	{
		id := enqueue(cks.NewTask{Type: "unstarted"}).ID
		tick()
		ct := claim("unstarted", "w2", false)
		tick()
		_, err := tasks.Complete(c, id, ct.LeaseToken, false, "done")
		must("complete", err)
		show("complete-claimed", id)
	}
	// Every move in one instant, with edits in the middle of the attempt.
	{
		id := enqueue(cks.NewTask{Type: "instant"}).ID
		_, err := tasks.UpdateTask(c, ledger.UpdateParams{ID: id, Actor: "op", Patch: cks.TaskPatch{Priority: num(2)}})
		must("update open", err)
		ct := claim("instant", "w1", false)
		_, err = tasks.UpdateTask(c, ledger.UpdateParams{ID: id, Actor: "op", Patch: cks.TaskPatch{Title: str("claimed title")}})
		must("update claimed", err)
		_, err = tasks.MarkRunning(c, id, ct.LeaseToken)
		must("running", err)
		_, err = tasks.UpdateTask(c, ledger.UpdateParams{ID: id, Actor: "op", Patch: cks.TaskPatch{Priority: num(3)}})
		must("update running", err)
		_, err = tasks.Fail(c, id, ct.LeaseToken, true, "flaky")
		must("fail", err)
		_, err = tasks.UpdateTask(c, ledger.UpdateParams{ID: id, Actor: "op", Patch: cks.TaskPatch{Priority: num(4)}})
		must("update open again", err)
		show("instant", id)
		tick()
	}
	// Reviewed: approved, and rejected then done again.
	{
		id := enqueue(cks.NewTask{Type: "approve"}).ID
		tick()
		ct := claim("approve", "w1", true)
		tick()
		_, err := tasks.Complete(c, id, ct.LeaseToken, true, "draft")
		must("complete for review", err)
		tick()
		rv, err := tasks.ClaimReview(c, id, "rev", backendtest.Lease)
		must("claim review", err)
		tick()
		_, err = tasks.Approve(c, id, rv.LeaseToken, "fine")
		must("approve", err)
		show("review-approve", id)

		id = enqueue(cks.NewTask{Type: "reject"}).ID
		tick()
		ct = claim("reject", "w1", true)
		tick()
		_, err = tasks.Complete(c, id, ct.LeaseToken, true, "draft")
		must("complete for review", err)
		tick()
		rv, err = tasks.ClaimReview(c, id, "rev", backendtest.Lease)
		must("claim review", err)
		tick()
		_, err = tasks.Reject(c, id, rv.LeaseToken, "again")
		must("reject", err)
		tick()
		ct = claim("reject", "w2", true)
		tick()
		_, err = tasks.Complete(c, id, ct.LeaseToken, false, "final")
		must("complete", err)
		show("review-reject", id)
	}
	// Failed and retried by the ledger, failed for good, retried by an
	// operator.
	{
		id := enqueue(cks.NewTask{Type: "flaky", MaxAttempts: 2}).ID
		tick()
		ct := claim("flaky", "w1", true)
		tick()
		_, err := tasks.Fail(c, id, ct.LeaseToken, true, "try again")
		must("fail", err)
		clk.Advance(2 * ledger.BackoffMax)
		ct = claim("flaky", "w2", true)
		tick()
		_, err = tasks.Fail(c, id, ct.LeaseToken, true, "still broken")
		must("fail", err)
		tick()
		_, err = tasks.Retry(c, id, "op", "once more")
		must("retry", err)
		tick()
		ct = claim("flaky", "w3", false)
		tick()
		_, err = tasks.Fail(c, id, ct.LeaseToken, false, "broken for good")
		must("fail", err)
		show("fail-retry", id)
	}
	// Asked for input, answered, done.
	{
		id := enqueue(cks.NewTask{Type: "ask"}).ID
		tick()
		ct := claim("ask", "w1", true)
		tick()
		_, err := tasks.RequestInput(c, id, ct.LeaseToken, "which one?")
		must("ask", err)
		tick()
		_, err = tasks.Answer(c, id, "op", "the blue one")
		must("answer", err)
		tick()
		ct = claim("ask", "w1", true)
		tick()
		_, err = tasks.Complete(c, id, ct.LeaseToken, false, "blue")
		must("complete", err)
		show("input", id)
	}
	// Leases expired and reclaimed: back to OPEN, then FAILED at the last
	// attempt.
	{
		id := enqueue(cks.NewTask{Type: "lost", MaxAttempts: 2}).ID
		tick()
		claim("lost", "w1", true)
		clk.Advance(2 * backendtest.Lease)
		_, err := tasks.ReclaimExpired(c, clk.Now())
		must("reclaim", err)
		clk.Advance(2 * ledger.BackoffMax)
		claim("lost", "w2", false)
		clk.Advance(2 * backendtest.Lease)
		_, err = tasks.ReclaimExpired(c, clk.Now())
		must("reclaim", err)
		show("lease-expired", id)
	}
	// Stopped while running, edited, started, done; stopped while claimed
	// with the abort confirmed.
	{
		id := enqueue(cks.NewTask{Type: "stop"}).ID
		tick()
		ct := claim("stop", "w1", true)
		tick()
		_, err := tasks.StopTask(c, ledger.StopParams{ID: id, Actor: "op", Reason: "hold it", Deadline: time.Minute})
		must("stop", err)
		tick()
		_, err = tasks.UpdateTask(c, ledger.UpdateParams{ID: id, Actor: "op", Patch: cks.TaskPatch{Description: str("better")}})
		must("update stopped", err)
		tick()
		_, err = tasks.Start(c, id, "op", "go again")
		must("start", err)
		tick()
		ct = claim("stop", "w2", true)
		tick()
		_, err = tasks.Complete(c, id, ct.LeaseToken, false, "done")
		must("complete", err)
		show("stop-start", id)

		id = enqueue(cks.NewTask{Type: "stopclaimed"}).ID
		tick()
		ct = claim("stopclaimed", "w1", false)
		tick()
		_, err = tasks.StopTask(c, ledger.StopParams{ID: id, Actor: "op", Reason: "hold it", Deadline: time.Minute})
		must("stop", err)
		tick()
		_, err = tasks.ConfirmAbort(c, id, ct.LeaseToken)
		must("confirm", err)
		tick()
		_, err = tasks.Start(c, id, "op", "go again")
		must("start", err)
		show("stop-claimed", id)
	}
	// Edited while running: live (priority), and material (a restart).
	{
		id := enqueue(cks.NewTask{Type: "edit"}).ID
		tick()
		ct := claim("edit", "w1", true)
		tick()
		_, err := tasks.UpdateTask(c, ledger.UpdateParams{ID: id, Actor: "op", Patch: cks.TaskPatch{Priority: num(5), Metadata: []byte(`{"owner":"bob"}`)}})
		must("live update", err)
		tick()
		_, err = tasks.UpdateTask(c, ledger.UpdateParams{ID: id, Actor: "op", Patch: cks.TaskPatch{AcceptanceCriteria: str("it works")}, Deadline: time.Minute})
		must("material update", err)
		tick()
		ct = claim("edit", "w2", false)
		tick()
		_, err = tasks.MarkRunning(c, id, ct.LeaseToken)
		must("running", err)
		tick()
		_, err = tasks.Complete(c, id, ct.LeaseToken, false, "done")
		must("complete", err)
		show("update-running", id)
	}
	// Dependencies: waiting, released; blocked by a cancelled one,
	// unblocked by an edit.
	{
		dep := enqueue(cks.NewTask{Type: "dep"}).ID
		tick()
		id := enqueue(cks.NewTask{Type: "dependant", DependsOn: []int64{dep}}).ID
		tick()
		ct := claim("dep", "w1", true)
		tick()
		_, err := tasks.Complete(c, dep, ct.LeaseToken, false, "done")
		must("complete dep", err)
		tick()
		_, err = tasks.ReleaseDependencies(c)
		must("release", err)
		tick()
		ct = claim("dependant", "w1", true)
		tick()
		_, err = tasks.Complete(c, id, ct.LeaseToken, false, "done")
		must("complete", err)
		show("deps-dep", dep)
		show("deps-released", id)

		done := enqueue(cks.NewTask{Type: "donedep"}).ID
		ct = claim("donedep", "w1", true)
		_, err = tasks.Complete(c, done, ct.LeaseToken, false, "done")
		must("complete", err)
		tick()
		ready := enqueue(cks.NewTask{Type: "ready", DependsOn: []int64{done}}).ID
		show("deps-met-at-create", ready)

		gone := enqueue(cks.NewTask{Type: "gone"}).ID
		tick()
		blocked := enqueue(cks.NewTask{Type: "blocked", DependsOn: []int64{gone}}).ID
		tick()
		_, err = tasks.Cancel(c, gone, "op", "dropped")
		must("cancel dep", err)
		tick()
		_, err = tasks.ReleaseDependencies(c)
		must("release", err)
		tick()
		_, err = tasks.UpdateTask(c, ledger.UpdateParams{ID: blocked, Actor: "op", Patch: cks.TaskPatch{RemoveDependsOn: []int64{gone}}})
		must("remove dep", err)
		show("deps-blocked", blocked)
		show("deps-cancelled", gone)
	}
	// Children added to a running parent (a restart), one cancelled.
	{
		parent := enqueue(cks.NewTask{Type: "parent"}).ID
		tick()
		claim("parent", "w1", true)
		tick()
		res, err := tasks.UpdateTask(c, ledger.UpdateParams{ID: parent, Actor: "op", Patch: cks.TaskPatch{AddChildren: []cks.NewTask{
			{Type: "child", Title: "one"}, {Type: "child", Title: "two", CreatedBy: "carol"}}}, Deadline: time.Minute})
		must("add children", err)
		tick()
		_, err = tasks.UpdateTask(c, ledger.UpdateParams{ID: parent, Actor: "op", Patch: cks.TaskPatch{CancelChildren: []int64{res.Children[1].ID}}})
		must("cancel child", err)
		show("children-parent", parent)
		show("children-one", res.Children[0].ID)
		show("children-two", res.Children[1].ID)
	}
	// Cancelled while running; given back; released with its executor.
	{
		id := enqueue(cks.NewTask{Type: "cancel"}).ID
		tick()
		claim("cancel", "w1", true)
		tick()
		_, err := tasks.Cancel(c, id, "op", "not needed")
		must("cancel", err)
		show("cancel-running", id)

		id = enqueue(cks.NewTask{Type: "giveback"}).ID
		tick()
		ct := claim("giveback", "w1", false)
		tick()
		_, err = tasks.GiveBack(c, id, ct.LeaseToken, "claim given back")
		must("give back", err)
		show("give-back", id)

		id = enqueue(cks.NewTask{Type: "release"}).ID
		tick()
		claim("release", "w9", true)
		tick()
		_, err = tasks.ReleaseExecutor(c, "w9", "hub", "w9 exited")
		must("release executor", err)
		show("release-executor", id)
	}
	// Stopped before any claim; cancelled from OPEN; a task still running.
	{
		id := enqueue(cks.NewTask{Type: "held"}).ID
		tick()
		_, err := tasks.StopTask(c, ledger.StopParams{ID: id, Actor: "op", Reason: "not yet"})
		must("stop", err)
		tick()
		_, err = tasks.Cancel(c, id, "op", "never mind")
		must("cancel", err)
		show("stop-open", id)

		id = enqueue(cks.NewTask{Type: "live"}).ID
		tick()
		ct := claim("live", "w1", false)
		tick()
		_, err = tasks.MarkRunning(c, id, ct.LeaseToken)
		must("running", err)
		tick()
		_, err = tasks.UpdateTask(c, ledger.UpdateParams{ID: id, Actor: "op", Patch: cks.TaskPatch{Title: str("renamed")}})
		must("live update", err)
		show("running-now", id)

		id = enqueue(cks.NewTask{Type: "justclaimed"}).ID
		tick()
		claim("justclaimed", "w1", false)
		show("claimed-now", id)
	}
	return b.String()
}
