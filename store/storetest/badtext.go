package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/backend"
	"github.com/cks-dev/cks/knowledge"
)

func badTextTests() []taskTest {
	return []taskTest{
		{"BadTextRefusedByWrites", testBadTextRefusedByWrites},
		{"BadTextRefusedByReads", testBadTextRefusedByReads},
	}
}

// BadTexts are strings no backend may store: Postgres refuses a NUL byte
// and invalid UTF-8 in TEXT (SQLite would store them), so the store refuses
// them on both before anything is written; and text longer than any
// field's limit (cks.MaxTextLen).
var BadTexts = []string{"nul\x00byte", "bad\xffutf8", "cut\xc3", "surrogate\xed\xa0\x80", TooLongText}

// TooLongText is longer than the limit of every text field.
var TooLongText = strings.Repeat("x", cks.MaxLongTextLen+1)

// BadJSON are JSON objects json.Valid accepts that no backend may store:
// Postgres jsonb refuses a \u0000 escape (in a value or a key), an unpaired
// surrogate escape and a number beyond numeric's range, and Postgres text
// raw invalid UTF-8.
var BadJSON = []string{
	`{"a":"\u0000"}`,
	`{"\u0000":1}`,
	`{"a":["x","y\u0000z"]}`,
	"{\"a\":\"\xff\"}",
	`{"a":"\ud800"}`,
	`{"a":"\udc00\ud800"}`,
	`{"a":1e131072}`,
	`{"a":1e-16384}`,
	// Past the bounds of every stored value: nesting, growth, size.
	`{"a":` + strings.Repeat("[", cks.MaxJSONDepth) + strings.Repeat("]", cks.MaxJSONDepth) + `}`,
	`{"a":` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}`,
	`{"a":1e400}`,
	`{"a":"` + strings.Repeat("x", cks.MaxJSONBytes) + `"}`,
}

// saysExpected reports whether err, refusing one of BadTexts or BadJSON,
// says what is expected: text or JSON in UTF-8, a number a numeric holds,
// or the bound the value is past.
func saysExpected(err error) bool {
	for _, w := range []string{"UTF-8", "numeric", "bytes of text", cks.ExpectedJSONDepth, cks.ExpectedJSONNumberGrowth,
		cks.ExpectedJSONSize, "bytes of JSON"} {
		if strings.Contains(err.Error(), w) {
			return true
		}
	}
	return false
}

// badInput is one argument of one store operation, and the operation
// called with a bad value in that argument (and good values in the rest).
type badInput struct {
	op, field string
	// json marks a JSON argument: call gets each of BadJSON instead of
	// each of BadTexts.
	json bool
	call func(v string) error
}

// State is everything a refused call must leave as it was, by record:
// every task with its events, evidence, decisions and aborts; every object
// with its log, edges and versions; the forks and edges; principals with
// their grants; liveness rows; the sweeper overrides of sweepers.
func State(t testing.TB, s *backend.Backend, sweepers ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for cursor := int64(0); ; {
		page, err := s.Tasks.ListTasks(ctx(t), cks.TaskFilter{After: cursor, Limit: cks.MaxListLimit})
		if err != nil {
			t.Fatalf("ListTasks: %v", err)
		}
		for _, task := range page.Tasks {
			out[fmt.Sprint("task ", task.ID)] = asJSON(t, MustGet(t, s, task.ID))
		}
		if page.Next == 0 {
			break
		}
		cursor = page.Next
	}
	for id, o := range objectSnapshot(t, s.Objects) {
		out[fmt.Sprint("object ", id)] = o
	}
	for id, v := range versionSnapshot(t, s.Objects, s.Objects) {
		out[fmt.Sprint("versions of ", id)] = v
	}
	out["forks"] = asJSON(t, mustForks(t, s.Objects, 0, cks.MaxListLimit))
	edges, err := s.Objects.ListEdges(ctx(t), 0, cks.MaxListLimit)
	if err != nil {
		t.Fatalf("ListEdges: %v", err)
	}
	out["edges"] = asJSON(t, edges)
	ps, err := s.Principals.ListPrincipals(ctx(t))
	if err != nil {
		t.Fatalf("ListPrincipals: %v", err)
	}
	out["principals"] = asJSON(t, ps)
	ls, err := s.Liveness.ListAgentLiveness(ctx(t))
	if err != nil {
		t.Fatalf("ListAgentLiveness: %v", err)
	}
	out["liveness"] = asJSON(t, ls)
	for _, id := range sweepers {
		o, err := s.Sweepers.GetSweeperDesiredRunning(ctx(t), id)
		if err != nil {
			t.Fatalf("GetSweeperDesiredRunning(%s): %v", id, err)
		}
		out["sweeper "+id] = asJSON(t, o)
	}
	return out
}

// DiffState reports (as test errors of what) every record that differs
// between two States.
func DiffState(t testing.TB, what string, before, after map[string]string) {
	t.Helper()
	var keys []string
	for k := range before {
		keys = append(keys, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if before[k] != after[k] {
			t.Errorf("%s changed %s:\n was %s\n now %s", what, k, before[k], after[k])
		}
	}
}

// testBadTextRefusedByWrites: every store write with a string or JSON
// argument refuses a value Postgres cannot store with a FieldError naming
// the argument as the API spells it, on both backends, and writes nothing.
func testBadTextRefusedByWrites(t *testing.T, open Opener) {
	s, clk := fakeStore(t, open)
	const sweeperID = "lease_reaper"
	open1, _ := into(t, s, cks.TaskOpen, "bt-open")
	claimed, claimedTok := into(t, s, cks.TaskClaimed, "bt-claimed")
	running, runTok := into(t, s, cks.TaskRunning, "bt-run")
	asking, _ := into(t, s, cks.TaskNeedsInput, "bt-input")
	review, _ := into(t, s, cks.TaskNeedsReview, "bt-review")
	reviewing, reviewTok := into(t, s, cks.TaskReviewing, "bt-reviewing")
	stopped, _ := into(t, s, cks.TaskStopped, "bt-stopped")
	aborted, abortTok := into(t, s, cks.TaskRunning, "bt-aborted")
	if _, ab := mustStop(t, s, aborted.ID, time.Minute); ab == nil {
		t.Fatal("stop of a running task recorded no abort")
	}

	live := Liveness("bt-instance", "critic", 0)
	MustUpsert(t, s, live)
	grant := cks.Grant{Resource: "/tasks", Permission: "read"}
	if err := s.Principals.CreatePrincipal(ctx(t), cks.Principal{ID: "bt-principal", Name: "bt", CreatedAt: T0}, "bt-hash", []cks.Grant{grant}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute) // any write now would change an updated_at

	c := func(op, field string, call func(v string) error) badInput {
		return badInput{op: op, field: field, call: call}
	}
	j := func(op, field string, call func(v string) error) badInput {
		return badInput{op: op, field: field, json: true, call: call}
	}
	enqueue := func(n cks.NewTask) error { _, _, err := s.Tasks.Enqueue(ctx(t), n); return err }
	update := func(p cks.TaskPatch) error { _, err := s.Tasks.Update(ctx(t), open1.ID, "op", p, 0); return err }
	updateRunning := func(p cks.TaskPatch) error { _, err := s.Tasks.Update(ctx(t), running.ID, "op", p, 0); return err }
	principal := func(p cks.Principal, hash string, gs ...cks.Grant) error {
		if p.ID == "" {
			p.ID = "bt-new"
		}
		if p.Name == "" {
			p.Name = "new"
		}
		p.CreatedAt = T0
		return s.Principals.CreatePrincipal(ctx(t), p, hash, gs)
	}
	upsert := func(f func(r *cks.AgentLiveness)) error {
		r := live
		r.LastHeartbeatAt = T0.Add(time.Minute)
		f(&r)
		return s.Liveness.UpsertAgentLiveness(ctx(t), r)
	}

	cases := []badInput{
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
		c("Claim", "worker", func(v string) error { _, err := s.Tasks.Claim(ctx(t), v, []string{"bt-open"}, 1, Lease); return err }),
		c("Claim", "types", func(v string) error {
			_, err := s.Tasks.Claim(ctx(t), "w", []string{"bt-open", v}, 1, Lease)
			return err
		}),
		c("MarkRunning", "lease_token", func(v string) error { _, err := s.Tasks.MarkRunning(ctx(t), claimed.ID, claimedTok+v); return err }),
		c("Touch", "lease_token", func(v string) error { _, err := s.Tasks.Touch(ctx(t), running.ID, runTok+v); return err }),
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
		c("ClaimReview", "reviewer", func(v string) error { _, err := s.Tasks.ClaimReview(ctx(t), review.ID, v, Lease); return err }),
		c("Approve", "note", func(v string) error { _, err := s.Tasks.Approve(ctx(t), reviewing.ID, reviewTok, v); return err }),
		c("Reject", "note", func(v string) error { _, err := s.Tasks.Reject(ctx(t), reviewing.ID, reviewTok, v); return err }),
		c("Approve", "lease_token", func(v string) error { _, err := s.Tasks.Approve(ctx(t), reviewing.ID, reviewTok+v, "ok"); return err }),
		c("Cancel", "reason", func(v string) error { _, err := s.Tasks.Cancel(ctx(t), open1.ID, "op", v); return err }),
		c("Cancel", "actor", func(v string) error { _, err := s.Tasks.Cancel(ctx(t), open1.ID, v, "why"); return err }),
		c("Stop", "reason", func(v string) error { _, _, err := s.Tasks.Stop(ctx(t), running.ID, "op", v, 0); return err }),
		c("Stop", "actor", func(v string) error { _, _, err := s.Tasks.Stop(ctx(t), open1.ID, v, "why", 0); return err }),
		c("Start", "reason", func(v string) error { _, err := s.Tasks.Start(ctx(t), stopped.ID, "op", v); return err }),
		c("Start", "actor", func(v string) error { _, err := s.Tasks.Start(ctx(t), stopped.ID, v, "go"); return err }),
		c("Update", "actor", func(v string) error {
			_, err := s.Tasks.Update(ctx(t), open1.ID, v, cks.TaskPatch{Title: ptr("t")}, 0)
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
	checkBadWrites(t, cases, func() map[string]string { return State(t, s, sweeperID) })
	// The refused calls left every fixture usable: the good calls succeed.
	if _, err := s.Tasks.AddEvidence(ctx(t), running.ID, runTok, "log", "fine"); err != nil {
		t.Errorf("AddEvidence after the refused calls: %v", err)
	}
}

// testBadTextRefusedByReads: a read whose string argument Postgres could
// not compare is refused alike on both backends (SQLite would find
// nothing; Postgres would fail the query), with a FieldError naming it.
func testBadTextRefusedByReads(t *testing.T, open Opener) {
	s, _ := fakeStore(t, open)
	reads := []badInput{
		{op: "ListTasks", field: "type", call: func(v string) error {
			_, err := s.Tasks.ListTasks(ctx(t), cks.TaskFilter{Types: []string{"x", v}})
			return err
		}},
		{op: "CountTasks", field: "type", call: func(v string) error {
			_, err := s.Tasks.CountTasks(ctx(t), cks.TaskFilter{Types: []string{v}})
			return err
		}},
		{op: "CountTasksByState", field: "type", call: func(v string) error {
			_, err := s.Tasks.CountTasksByState(ctx(t), cks.TaskFilter{Types: []string{v}})
			return err
		}},
		{op: "GetAgentLiveness", field: "instance_id", call: func(v string) error { _, err := s.Liveness.GetAgentLiveness(ctx(t), v); return err }},
		{op: "LatestAgentLiveness", field: "process_kind", call: func(v string) error {
			_, err := s.Liveness.LatestAgentLiveness(ctx(t), v)
			return err
		}},
		{op: "PrincipalByTokenHash", field: "token_hash", call: func(v string) error {
			_, err := s.Principals.PrincipalByTokenHash(ctx(t), v)
			return err
		}},
		{op: "GrantsOf", field: "id", call: func(v string) error { _, err := s.Principals.GrantsOf(ctx(t), v); return err }},
		{op: "GetSweeperDesiredRunning", field: "agent_id", call: func(v string) error {
			_, err := s.Sweepers.GetSweeperDesiredRunning(ctx(t), v)
			return err
		}},
		{op: "WatchChanges", field: "topics", call: func(v string) error {
			// Cancelled: a watch that is not refused returns at once.
			c, cancel := context.WithCancel(ctx(t))
			cancel()
			return s.Changes.WatchChanges(c, []string{cks.TopicTasksReady, v}, func(string) {})
		}},
	}
	checkBadReads(t, reads)
}

// badTextKnowledgeTests are the bad-text tests of the knowledge store, run
// by RunKnowledge too.
func badTextKnowledgeTests() []taskTest {
	return []taskTest{
		{"BadTextRefusedByKnowledgeWrites", testBadTextRefusedByKnowledgeWrites},
		{"BadTextRefusedByKnowledgeReads", testBadTextRefusedByKnowledgeReads},
	}
}

// knowledgeState is everything of the knowledge store a refused call must
// leave as it was: every object with its log, edges and versions, the forks
// and the edges.
func knowledgeState(t testing.TB, s *backend.Backend) map[string]string {
	t.Helper()
	out := map[string]string{}
	for id, o := range objectSnapshot(t, s.Objects) {
		out[fmt.Sprint("object ", id)] = o
	}
	for id, v := range versionSnapshot(t, s.Objects, s.Objects) {
		out[fmt.Sprint("versions of ", id)] = v
	}
	out["forks"] = asJSON(t, mustForks(t, s.Objects, 0, cks.MaxListLimit))
	edges, err := s.Objects.ListEdges(ctx(t), 0, cks.MaxListLimit)
	if err != nil {
		t.Fatalf("ListEdges: %v", err)
	}
	out["edges"] = asJSON(t, edges)
	return out
}

// checkBadWrites calls every case with every bad value and fails the test
// unless each is refused with a FieldError naming the case's field that
// says what text is expected, and state (read before and after each case)
// did not change.
func checkBadWrites(t *testing.T, cases []badInput, state func() map[string]string) {
	t.Helper()
	before := state()
	for _, bc := range cases {
		values := BadTexts
		if bc.json {
			values = BadJSON
		}
		for _, v := range values {
			err := bc.call(v)
			var fe *cks.FieldError
			if !errors.Is(err, cks.ErrInvalid) || !errors.As(err, &fe) || fe.Field != bc.field {
				t.Errorf("%s with %s %.60q: err = %.200v, want a FieldError naming %s", bc.op, bc.field, v, err, bc.field)
			} else if !saysExpected(err) {
				t.Errorf("%s with %s %.60q: error %.200q does not say what text is expected", bc.op, bc.field, v, err)
			}
		}
		after := state()
		DiffState(t, bc.op+" with a bad "+bc.field, before, after)
		before = after // report each write once
	}
}

// checkBadReads fails the test unless every read refuses every bad text
// with a FieldError naming its field.
func checkBadReads(t *testing.T, reads []badInput) {
	t.Helper()
	for _, r := range reads {
		for _, v := range BadTexts {
			if err := r.call(v); !cks.IsFieldError(err, r.field) || !errors.Is(err, cks.ErrInvalid) {
				t.Errorf("%s with %s %.60q: err = %.200v, want a FieldError naming %s", r.op, r.field, v, err, r.field)
			}
		}
	}
}

// testBadTextRefusedByKnowledgeWrites: every knowledge store write with a
// string or JSON argument refuses a value Postgres cannot store with a
// FieldError naming the argument as the API spells it, on both backends,
// and writes nothing.
func testBadTextRefusedByKnowledgeWrites(t *testing.T, open Opener) {
	s, clk := fakeStore(t, open)
	question := MustCreateObject(t, s.Objects, knowledge.NewObject{Kind: "question", Title: "q", Status: "awaiting_bt", CreatedBy: "op"})
	MustCreateObject(t, s.Objects, knowledge.NewObject{Kind: "question", Title: "c", Status: "claimed_bt", CreatedBy: "op"})
	held := mustClaimObjects(t, s.Objects, "claimed_bt", "w-objects", 1, 1)[0]
	versioned := MustCreateObject(t, s.Objects, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"v":1}`), CreatedBy: "op"})
	forked := MustCreateObject(t, s.Objects, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"f":0}`), CreatedBy: "op"})
	headA, headB := fork(t, s.Objects, forked, "bt")
	heads := []int64{headA.Version, headB.Version}
	clk.Advance(time.Minute) // any write now would change an updated_at

	c := func(op, field string, call func(v string) error) badInput {
		return badInput{op: op, field: field, call: call}
	}
	j := func(op, field string, call func(v string) error) badInput {
		return badInput{op: op, field: field, json: true, call: call}
	}
	transition := func(tr knowledge.ObjectTransition) error {
		_, _, err := s.Objects.TransitionObject(ctx(t), held.ID, held.ClaimToken, tr)
		return err
	}
	goodTransition := func() knowledge.ObjectTransition {
		return knowledge.ObjectTransition{From: "claimed_bt", To: "done_bt", Action: "completed", Agent: "bt-step", Reasoning: -1}
	}
	attach := func(o knowledge.NewObject) knowledge.ObjectTransition {
		tr := goodTransition()
		if o.Kind == "" {
			o.Kind = "critique"
		}
		tr.Attach = []knowledge.Attachment{{Object: o, BaseType: "depends_on", SemanticType: "critiques"}}
		return tr
	}
	merge := func(content, author string, reason *knowledge.Attachment) error {
		_, _, err := s.Objects.MergeVersions(ctx(t), forked.ID, heads, json.RawMessage(content), author, reason)
		return err
	}
	cases := []badInput{
		c("CreateObject", "kind", func(v string) error {
			_, err := s.Objects.CreateObject(ctx(t), knowledge.NewObject{Kind: v})
			return err
		}),
		c("CreateObject", "title", func(v string) error {
			_, err := s.Objects.CreateObject(ctx(t), knowledge.NewObject{Kind: "q", Title: v})
			return err
		}),
		c("CreateObject", "status", func(v string) error {
			_, err := s.Objects.CreateObject(ctx(t), knowledge.NewObject{Kind: "q", Status: v})
			return err
		}),
		c("CreateObject", "created_by", func(v string) error {
			_, err := s.Objects.CreateObject(ctx(t), knowledge.NewObject{Kind: "q", CreatedBy: v})
			return err
		}),
		j("CreateObject", "content", func(v string) error {
			_, err := s.Objects.CreateObject(ctx(t), knowledge.NewObject{Kind: "q", Content: json.RawMessage(v)})
			return err
		}),
		c("AddEdges", "edges[0].semantic_type", func(v string) error {
			_, err := s.Objects.AddEdges(ctx(t), []knowledge.NewEdge{{Src: question.ID, Dst: versioned.ID, BaseType: "depends_on", SemanticType: v}})
			return err
		}),
		c("ClaimObjects", "worker", func(v string) error { _, err := s.Objects.ClaimObjects(ctx(t), "awaiting_bt", v, 1); return err }),
		c("ClaimObject", "worker", func(v string) error {
			_, err := s.Objects.ClaimObject(ctx(t), question.ID, v, []string{"awaiting_bt"})
			return err
		}),
		c("TouchClaim", "claim_token", func(v string) error { return s.Objects.TouchClaim(ctx(t), held.ID, held.ClaimToken+v) }),
		c("ReleaseClaim", "claim_token", func(v string) error { return s.Objects.ReleaseClaim(ctx(t), held.ID, held.ClaimToken+v) }),
		c("TransitionObject", "claim_token", func(v string) error {
			_, _, err := s.Objects.TransitionObject(ctx(t), held.ID, held.ClaimToken+v, goodTransition())
			return err
		}),
		c("TransitionObject", "agent", func(v string) error { tr := goodTransition(); tr.Agent = v; return transition(tr) }),
		j("TransitionObject", "content", func(v string) error {
			tr := goodTransition()
			tr.Content = json.RawMessage(v)
			return transition(tr)
		}),
		c("TransitionObject", "attach[0].object.title", func(v string) error { return transition(attach(knowledge.NewObject{Title: v})) }),
		c("TransitionObject", "attach[0].object.created_by", func(v string) error {
			return transition(attach(knowledge.NewObject{CreatedBy: v}))
		}),
		j("TransitionObject", "attach[0].object.content", func(v string) error {
			return transition(attach(knowledge.NewObject{Content: json.RawMessage(v)}))
		}),
		j("WriteVersion", "content", func(v string) error {
			_, err := s.Objects.WriteVersion(ctx(t), versioned.ID, versioned.HeadVersion, json.RawMessage(v), "w")
			return err
		}),
		c("WriteVersion", "author", func(v string) error {
			_, err := s.Objects.WriteVersion(ctx(t), versioned.ID, versioned.HeadVersion, json.RawMessage(`{"v":2}`), v)
			return err
		}),
		j("MergeVersions", "content", func(v string) error { return merge(v, "fr", nil) }),
		c("MergeVersions", "author", func(v string) error { return merge(`{"m":1}`, v, nil) }),
		c("MergeVersions", "reason.object.title", func(v string) error {
			r := resolvesReason(`{"rule":"x"}`)
			r.Object.Title = v
			return merge(`{"m":1}`, "fr", r)
		}),
		j("MergeVersions", "reason.object.content", func(v string) error { return merge(`{"m":1}`, "fr", resolvesReason(v)) }),
	}
	checkBadWrites(t, cases, func() map[string]string { return knowledgeState(t, s) })
	// The refused calls left every fixture usable: the good calls succeed.
	if _, _, err := s.Objects.TransitionObject(ctx(t), held.ID, held.ClaimToken, goodTransition()); err != nil {
		t.Errorf("TransitionObject after the refused calls: %v", err)
	}
	if err := merge(`{"m":1}`, "fr", nil); err != nil {
		t.Errorf("MergeVersions after the refused calls: %v", err)
	}
}

// testBadTextRefusedByKnowledgeReads: a knowledge read whose string
// argument Postgres could not compare is refused alike on both backends,
// with a FieldError naming it.
func testBadTextRefusedByKnowledgeReads(t *testing.T, open Opener) {
	s, _ := fakeStore(t, open)
	checkBadReads(t, []badInput{
		{op: "ListObjects", field: "kind", call: func(v string) error {
			_, err := s.Objects.ListObjects(ctx(t), cks.ObjectFilter{Kinds: []string{v}})
			return err
		}},
		{op: "ListObjects", field: "status", call: func(v string) error {
			_, err := s.Objects.ListObjects(ctx(t), cks.ObjectFilter{Statuses: []string{"ok", v}})
			return err
		}},
		{op: "ClaimObjects", field: "status", call: func(v string) error { _, err := s.Objects.ClaimObjects(ctx(t), v, "w", 1); return err }},
		{op: "ClaimObject", field: "statuses", call: func(v string) error {
			_, err := s.Objects.ClaimObject(ctx(t), 1, "w", []string{v})
			return err
		}},
	})
}

// Into makes a task of type typ in state st through real operations and
// returns it with the lease token of its executor or reviewer ("" when
// none), for tests above the store that need tasks in every state.
func Into(t testing.TB, s *backend.Backend, st cks.TaskState, typ string) (cks.Task, string) {
	t.Helper()
	return into(t, s, st, typ)
}
