package ledger_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestBadText: the ledger's writes and reads refuse text Postgres cannot
// store or compare, alike on both backends.
func TestBadText(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"BadTextRefusedByWrites": testBadTextRefusedByWrites,
		"BadTextRefusedByReads":  testBadTextRefusedByReads,
	})
}

// testBadTextRefusedByWrites: every store write with a string or JSON
// argument refuses a value Postgres cannot store with a FieldError naming
// the argument as the API spells it, on both backends, and writes nothing.
func testBadTextRefusedByWrites(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	const sweeperID = "lease_reaper"
	open1, _ := backendtest.Into(t, s, cks.TaskOpen, "bt-open")
	claimed, claimedTok := backendtest.Into(t, s, cks.TaskClaimed, "bt-claimed")
	running, runTok := backendtest.Into(t, s, cks.TaskRunning, "bt-run")
	asking, _ := backendtest.Into(t, s, cks.TaskNeedsInput, "bt-input")
	review, _ := backendtest.Into(t, s, cks.TaskNeedsReview, "bt-review")
	reviewing, reviewTok := backendtest.Into(t, s, cks.TaskReviewing, "bt-reviewing")
	stopped, _ := backendtest.Into(t, s, cks.TaskStopped, "bt-stopped")
	aborted, abortTok := backendtest.Into(t, s, cks.TaskRunning, "bt-aborted")
	if _, ab := mustStop(t, s, aborted.ID, time.Minute); ab == nil {
		t.Fatal("stop of a running task recorded no abort")
	}

	live := backendtest.Liveness("bt-instance", "critic", 0)
	backendtest.MustUpsert(t, s, live)
	grant := cks.Grant{Resource: "/tasks", Permission: "read"}
	if err := s.Principals.CreatePrincipal(ctx(t), cks.Principal{ID: "bt-principal", Name: "bt", CreatedAt: backendtest.T0}, "bt-hash", []cks.Grant{grant}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second) // any write now would change an updated_at (and the leases still run)

	c := func(op, field string, call func(v string) error) backendtest.BadInput {
		return backendtest.BadInput{Op: op, Field: field, Call: call}
	}
	j := func(op, field string, call func(v string) error) backendtest.BadInput {
		return backendtest.BadInput{Op: op, Field: field, JSON: true, Call: call}
	}
	enqueue := func(n cks.NewTask) error { _, _, err := s.Tasks.Enqueue(ctx(t), n); return err }
	update := func(p cks.TaskPatch) error {
		_, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: open1.ID, Actor: "op", Patch: p})
		return err
	}
	updateRunning := func(p cks.TaskPatch) error {
		_, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: running.ID, Actor: "op", Patch: p})
		return err
	}
	principal := func(p cks.Principal, hash string, gs ...cks.Grant) error {
		if p.ID == "" {
			p.ID = "bt-new"
		}
		if p.Name == "" {
			p.Name = "new"
		}
		p.CreatedAt = backendtest.T0
		return s.Principals.CreatePrincipal(ctx(t), p, hash, gs)
	}
	upsert := func(f func(r *cks.AgentLiveness)) error {
		r := live
		r.LastHeartbeatAt = backendtest.T0.Add(time.Minute)
		f(&r)
		return s.Liveness.UpsertAgentLiveness(ctx(t), r)
	}

	cases := []backendtest.BadInput{
		// Tasks: enqueue.
		c("Enqueue", "type", func(v string) error { return enqueue(cks.NewTask{Type: v}) }),
		c("Enqueue", "title", func(v string) error { return enqueue(cks.NewTask{Type: "bt-new", Title: v}) }),
		c("Enqueue", "description", func(v string) error { return enqueue(cks.NewTask{Type: "bt-new", Description: v}) }),
		c("Enqueue", "acceptance_criteria", func(v string) error { return enqueue(cks.NewTask{Type: "bt-new", AcceptanceCriteria: v}) }),
		c("Enqueue", "dedupe_key", func(v string) error { return enqueue(cks.NewTask{Type: "bt-new", DedupeKey: v}) }),
		c("Enqueue", "created_by", func(v string) error { return enqueue(cks.NewTask{Type: "bt-new", CreatedBy: v}) }),
		j("Enqueue", "payload", func(v string) error { return enqueue(cks.NewTask{Type: "bt-new", Payload: json.RawMessage(v)}) }),
		j("Enqueue", "metadata", func(v string) error { return enqueue(cks.NewTask{Type: "bt-new", Metadata: json.RawMessage(v)}) }),
		// Tasks: executor calls.
		c("Claim", "worker", func(v string) error {
			_, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: v, Types: []string{"bt-open"}, N: 1, Lease: backendtest.Lease})
			return err
		}),
		c("Claim", "types", func(v string) error {
			_, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", Types: []string{"bt-open", v}, N: 1, Lease: backendtest.Lease})
			return err
		}),
		c("MarkRunning", "lease_token", func(v string) error { _, err := s.Tasks.MarkRunning(ctx(t), claimed.ID, claimedTok+v); return err }),
		c("Heartbeat", "lease_token", func(v string) error { _, err := s.Tasks.Heartbeat(ctx(t), running.ID, runTok+v); return err }),
		c("AddEvidence", "lease_token", func(v string) error {
			_, err := s.Tasks.AddEvidence(ctx(t), running.ID, runTok+v, "log", "b")
			return err
		}),
		c("AddEvidence", "kind", func(v string) error { _, err := s.Tasks.AddEvidence(ctx(t), running.ID, runTok, v, "b"); return err }),
		c("AddEvidence", "body", func(v string) error { _, err := s.Tasks.AddEvidence(ctx(t), running.ID, runTok, "log", v); return err }),
		c("Complete", "result", func(v string) error { _, err := s.Tasks.Complete(ctx(t), running.ID, runTok, false, v); return err }),
		c("Complete", "lease_token", func(v string) error { _, err := s.Tasks.Complete(ctx(t), running.ID, runTok+v, false, "r"); return err }),
		c("Fail", "reason", func(v string) error { _, err := s.Tasks.Fail(ctx(t), running.ID, runTok, true, v); return err }),
		c("RequestInput", "question", func(v string) error { _, err := s.Tasks.RequestInput(ctx(t), running.ID, runTok, v); return err }),
		c("RecordDecision", "kind", func(v string) error {
			_, err := s.Tasks.RecordDecision(ctx(t), running.ID, runTok, v, "t", 1)
			return err
		}),
		c("RecordDecision", "text", func(v string) error {
			_, err := s.Tasks.RecordDecision(ctx(t), running.ID, runTok, "atomic", v, 1)
			return err
		}),
		c("ReuseWorkspace", "path", func(v string) error {
			_, err := s.Tasks.ReuseWorkspace(ctx(t), running.ID, runTok, "/ws/"+v, 1)
			return err
		}),
		c("ConfirmAbort", "lease_token", func(v string) error { _, err := s.Tasks.ConfirmAbort(ctx(t), aborted.ID, abortTok+v); return err }),
		// Tasks: operator calls.
		c("Answer", "text", func(v string) error { _, err := s.Tasks.Answer(ctx(t), asking.ID, "op", v); return err }),
		c("Answer", "actor", func(v string) error { _, err := s.Tasks.Answer(ctx(t), asking.ID, v, "yes"); return err }),
		c("ClaimReview", "reviewer", func(v string) error {
			_, err := s.Tasks.ClaimReview(ctx(t), review.ID, v, backendtest.Lease)
			return err
		}),
		c("Approve", "note", func(v string) error { _, err := s.Tasks.Approve(ctx(t), reviewing.ID, reviewTok, v); return err }),
		c("Reject", "note", func(v string) error { _, err := s.Tasks.Reject(ctx(t), reviewing.ID, reviewTok, v); return err }),
		c("Approve", "lease_token", func(v string) error { _, err := s.Tasks.Approve(ctx(t), reviewing.ID, reviewTok+v, "ok"); return err }),
		c("Cancel", "reason", func(v string) error { _, err := s.Tasks.Cancel(ctx(t), open1.ID, "op", v); return err }),
		c("Cancel", "actor", func(v string) error { _, err := s.Tasks.Cancel(ctx(t), open1.ID, v, "why"); return err }),
		c("Stop", "reason", func(v string) error {
			_, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: running.ID, Actor: "op", Reason: v})
			return err
		}),
		c("Stop", "actor", func(v string) error {
			_, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: open1.ID, Actor: v, Reason: "why"})
			return err
		}),
		c("Start", "reason", func(v string) error { _, err := s.Tasks.Start(ctx(t), stopped.ID, "op", v); return err }),
		c("Start", "actor", func(v string) error { _, err := s.Tasks.Start(ctx(t), stopped.ID, v, "go"); return err }),
		c("Update", "actor", func(v string) error {
			_, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: open1.ID, Actor: v, Patch: cks.TaskPatch{Title: ptr("t")}})
			return err
		}),
		c("Update", "title", func(v string) error { return update(cks.TaskPatch{Title: &v}) }),
		c("Update", "description", func(v string) error { return updateRunning(cks.TaskPatch{Description: &v}) }),
		c("Update", "acceptance_criteria", func(v string) error { return update(cks.TaskPatch{AcceptanceCriteria: &v}) }),
		j("Update", "payload", func(v string) error { return updateRunning(cks.TaskPatch{Payload: json.RawMessage(v)}) }),
		j("Update", "metadata", func(v string) error { return update(cks.TaskPatch{Metadata: json.RawMessage(v)}) }),
		c("Update", "add_children[0].title", func(v string) error {
			return update(cks.TaskPatch{AddChildren: []cks.NewTask{{Type: "bt-child", Title: v}}})
		}),
		c("Update", "add_children[1].type", func(v string) error {
			return update(cks.TaskPatch{AddChildren: []cks.NewTask{{Type: "bt-child"}, {Type: v}}})
		}),
		j("Update", "add_children[0].payload", func(v string) error {
			return update(cks.TaskPatch{AddChildren: []cks.NewTask{{Type: "bt-child", Payload: json.RawMessage(v)}}})
		}),
		// Liveness, principals, sweepers.
		c("UpsertAgentLiveness", "instance_id", func(v string) error { return upsert(func(r *cks.AgentLiveness) { r.InstanceID = v }) }),
		c("UpsertAgentLiveness", "process_kind", func(v string) error { return upsert(func(r *cks.AgentLiveness) { r.ProcessKind = v }) }),
		c("UpsertAgentLiveness", "hostname", func(v string) error { return upsert(func(r *cks.AgentLiveness) { r.Hostname = v }) }),
		c("UpsertAgentLiveness", "current_task_type", func(v string) error {
			return upsert(func(r *cks.AgentLiveness) { id := running.ID; r.CurrentTaskID, r.CurrentTaskType = &id, v })
		}),
		c("RequestAgentStop", "instance_id", func(v string) error { _, err := s.Liveness.RequestAgentStop(ctx(t), live.InstanceID+v); return err }),
		c("CreatePrincipal", "id", func(v string) error { return principal(cks.Principal{ID: v}, "h", grant) }),
		c("CreatePrincipal", "name", func(v string) error { return principal(cks.Principal{Name: v}, "h", grant) }),
		c("CreatePrincipal", "token_hash", func(v string) error { return principal(cks.Principal{}, v, grant) }),
		c("CreatePrincipal", "grants[1].resource", func(v string) error {
			return principal(cks.Principal{}, "h", grant, cks.Grant{Resource: "/sweepers/" + v, Permission: "read"})
		}),
		c("CreatePrincipal", "grants[0].permission", func(v string) error {
			return principal(cks.Principal{}, "h", cks.Grant{Resource: "/", Permission: v})
		}),
		c("DeletePrincipal", "id", func(v string) error { return s.Principals.DeletePrincipal(ctx(t), "bt-principal"+v) }),
		c("SetSweeperDesiredRunning", "agent_id", func(v string) error { return s.Sweepers.SetSweeperDesiredRunning(ctx(t), sweeperID+v, false) }),
	}
	backendtest.CheckBadWrites(t, cases, func() map[string]string { return backendtest.State(t, s, sweeperID) })
	// The refused calls left every fixture usable: the good calls succeed.
	if _, err := s.Tasks.AddEvidence(ctx(t), running.ID, runTok, "log", "fine"); err != nil {
		t.Errorf("AddEvidence after the refused calls: %v", err)
	}
}

// testBadTextRefusedByReads: a read whose string argument Postgres could
// not compare is refused alike on both backends (SQLite would find
// nothing; Postgres would fail the query), with a FieldError naming it.
func testBadTextRefusedByReads(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	reads := []backendtest.BadInput{
		{Op: "ListTasks", Field: "type", Call: func(v string) error {
			_, err := s.Tasks.ListTasks(ctx(t), cks.TaskFilter{Types: []string{"x", v}})
			return err
		}},
		{Op: "CountTasks", Field: "type", Call: func(v string) error {
			_, err := s.Tasks.CountTasks(ctx(t), cks.TaskFilter{Types: []string{v}})
			return err
		}},
		{Op: "CountTasksByState", Field: "type", Call: func(v string) error {
			_, err := s.Tasks.CountTasksByState(ctx(t), cks.TaskFilter{Types: []string{v}})
			return err
		}},
		{Op: "GetAgentLiveness", Field: "instance_id", Call: func(v string) error { _, err := s.Liveness.GetAgentLiveness(ctx(t), v); return err }},
		{Op: "LatestAgentLiveness", Field: "process_kind", Call: func(v string) error {
			_, err := s.Liveness.LatestAgentLiveness(ctx(t), v)
			return err
		}},
		{Op: "PrincipalByTokenHash", Field: "token_hash", Call: func(v string) error {
			_, err := s.Principals.PrincipalByTokenHash(ctx(t), v)
			return err
		}},
		{Op: "GrantsOf", Field: "id", Call: func(v string) error { _, err := s.Principals.GrantsOf(ctx(t), v); return err }},
		{Op: "GetSweeperDesiredRunning", Field: "agent_id", Call: func(v string) error {
			_, err := s.Sweepers.GetSweeperDesiredRunning(ctx(t), v)
			return err
		}},
		{Op: "WatchChanges", Field: "topics", Call: func(v string) error {
			// Cancelled: a watch that is not refused returns at once.
			c, cancel := context.WithCancel(ctx(t))
			cancel()
			return s.Changes.WatchChanges(c, []string{cks.TopicTasksReady, v}, func(string) {})
		}},
	}
	backendtest.CheckBadReads(t, reads)
}
