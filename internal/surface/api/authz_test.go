package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
)

// tokenWith creates a principal holding exactly grants and returns its token.
func (f *fixture) tokenWith(t testing.TB, grants ...cks.Grant) string {
	t.Helper()
	_, tok, err := auth.CreateToken(context.Background(), f.store.Principals, f.clock, "p", grants)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// do sends method path with body as token and returns the status and body.
// Streaming answers (the event stream) are read only to their headers.
func (f *fixture) do(t testing.TB, token, method, path, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func wantForbidden(t testing.TB, status int, body, perm, res string) {
	t.Helper()
	if status != http.StatusForbidden {
		t.Fatalf("status %d (%s), want 403 forbidden", status, body)
	}
	e := decodeError(t, body)
	if e.Error.Code != "forbidden" || !strings.Contains(e.Error.Message, "needs "+perm+" on "+res) {
		t.Fatalf("403 body %s, want code forbidden naming %s on %s", body, perm, res)
	}
}

// TestACLMatrix: for every route and every permission P, a principal holding
// exactly P on the route's resource is allowed iff P is the route's
// permission or admin; a refusal is 403 naming the permission and resource.
func TestACLMatrix(t *testing.T) {
	f := newFixture(t)
	task, _, err := f.store.Tasks.Enqueue(context.Background(), cks.NewTask{Type: "t", Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	routes := f.api.Routes()
	if len(routes) < 25 {
		t.Fatalf("only %d routes in the table", len(routes))
	}
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		id := fmt.Sprint(task.ID)
		values := strings.NewReplacer("{task_id}", id, "{object_id}", id, "{agent_id}", sweeper.LeaseReaperID,
			"{id}", "no-such-principal", "{process_kind}", "critic")
		path = values.Replace(path)
		res := values.Replace(rt.Resource)
		if err := auth.ValidResource(res); err != nil {
			t.Fatalf("%s: resource %s: %v", rt.Pattern, res, err)
		}
		body := ""
		if method != http.MethodGet {
			body = "{}" // enough to get past authorization to the handler
		}
		for _, perm := range auth.Permissions {
			tok := f.tokenWith(t, cks.Grant{Resource: res, Permission: perm})
			status, out := f.do(t, tok, method, path, body)
			allowed := perm == rt.Permission || perm == auth.PermAdmin
			switch {
			case allowed && status == http.StatusForbidden:
				t.Errorf("%s with %s on %s: 403 (%s), want allowed", rt.Pattern, perm, res, out)
			case !allowed && status != http.StatusForbidden:
				t.Errorf("%s with %s on %s: status %d (%s), want 403", rt.Pattern, perm, res, status, out)
			case !allowed:
				wantForbidden(t, status, out, rt.Permission, res)
			}
		}
	}
}

// TestACLPrefixSegments: a grant covers its subtree by whole path segments.
func TestACLPrefixSegments(t *testing.T) {
	f := newFixture(t)
	for range 12 {
		if _, _, err := f.store.Tasks.Enqueue(context.Background(), cks.NewTask{Type: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	one := f.tokenWith(t, cks.Grant{Resource: "/tasks/1", Permission: auth.PermRead})
	if status, body := f.do(t, one, "GET", "/v1/tasks/1", ""); status != http.StatusOK {
		t.Fatalf("read on /tasks/1, GET task 1: %d %s", status, body)
	}
	status, body := f.do(t, one, "GET", "/v1/tasks/12", "")
	wantForbidden(t, status, body, "read", "/tasks/12")
	status, body = f.do(t, one, "GET", "/v1/tasks", "")
	wantForbidden(t, status, body, "read", "/tasks")

	all := f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermRead})
	for _, p := range []string{"/v1/tasks", "/v1/tasks/1", "/v1/tasks/12"} {
		if status, body := f.do(t, all, "GET", p, ""); status != http.StatusOK {
			t.Errorf("read on /tasks, GET %s: %d %s", p, status, body)
		}
	}
	status, body = f.do(t, all, "GET", "/v1/sweepers", "")
	wantForbidden(t, status, body, "read", "/sweepers")
	// Holding stop does not grant start, update does not grant stop or cancel.
	status, body = f.do(t, f.tokenWith(t, cks.Grant{Resource: "/", Permission: auth.PermUpdate}), "POST", "/v1/tasks/1/cancel", "{}")
	wantForbidden(t, status, body, "cancel", "/tasks/1")
}

// TestTaskScopedAgentToken: a claim hands back a credential that can work
// its own task and create children of it, and nothing else.
func TestTaskScopedAgentToken(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	admin := f.client()
	mine, _, err := admin.CreateTask(ctx, cks.NewTask{Type: "build", Title: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := admin.CreateTask(ctx, cks.NewTask{Type: "other", Title: "other"})
	if err != nil {
		t.Fatal(err)
	}
	// A worker that may claim (append on /tasks) and nothing more.
	worker := client.New(f.srv.URL, f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermAppend}))
	claimed, err := worker.ClaimWithTokens(ctx, "w1", []string{"build"}, 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed.Tasks) != 1 || claimed.Tasks[0].ID != mine.ID {
		t.Fatalf("claimed %+v, want task %d", claimed.Tasks, mine.ID)
	}
	agentTok := claimed.AgentTokens[fmt.Sprint(mine.ID)]
	if agentTok == "" {
		t.Fatalf("claim answer has no agent token for %d: %v", mine.ID, claimed.AgentTokens)
	}
	lease := claimed.Tasks[0].LeaseToken
	agent := client.New(f.srv.URL, agentTok)

	// Its own task: read and append.
	if _, err := agent.GetTask(ctx, mine.ID); err != nil {
		t.Fatalf("agent reads its task: %v", err)
	}
	if _, err := agent.MarkRunning(ctx, mine.ID, lease); err != nil {
		t.Fatalf("agent marks its task running: %v", err)
	}
	if held, err := agent.Touch(ctx, mine.ID, lease); err != nil || !held {
		t.Fatalf("agent touches its task: %v %v", held, err)
	}
	if _, err := agent.AddEvidence(ctx, mine.ID, lease, "note", "progress"); err != nil {
		t.Fatalf("agent adds evidence: %v", err)
	}
	child, created, err := agent.CreateTask(ctx, cks.NewTask{Type: "sub", ParentID: &mine.ID})
	if err != nil || !created {
		t.Fatalf("agent creates a child of its task: %v", err)
	}
	// Operator verbs on its own task: 403 naming the permission.
	tid := auth.TaskResource(mine.ID)
	for _, c := range []struct{ path, body, perm string }{
		{"/cancel", `{"reason":"escape"}`, "cancel"},
		{"/answer", `{"text":"rewrite"}`, "update"},
		{"/review/claim", `{}`, "update"},
		{"/review/approve", `{}`, "update"},
		{"/review/reject", `{}`, "update"},
		{"/stop", `{"reason":"escape the gate"}`, "stop"},
		{"/start", `{}`, "start"},
	} {
		status, body := f.do(t, agentTok, "POST", "/v1/tasks/"+fmt.Sprint(mine.ID)+c.path, c.body)
		wantForbidden(t, status, body, c.perm, tid)
	}
	// Nor rewrite the criteria it is judged against.
	status, body := f.do(t, agentTok, "PATCH", "/v1/tasks/"+fmt.Sprint(mine.ID), `{"acceptance_criteria":"whatever I did"}`)
	wantForbidden(t, status, body, "update", tid)
	// It records its decisions, with the revision they were derived from.
	dec, err := agent.RecordDecision(ctx, mine.ID, lease, "atomic", "no decomposition needed", claimed.Tasks[0].Revision)
	if err != nil || dec.DerivedFromRevision != 1 || dec.Kind != "atomic" || dec.ID == 0 {
		t.Fatalf("agent records a decision: %+v %v", dec, err)
	}
	if _, err := agent.RecordDecision(ctx, mine.ID, lease, "atomic", "from the future", 2); apiErr(t, err).Field != "derived_from_revision" {
		t.Fatalf("decision from a revision that does not exist: %v, want 400 naming derived_from_revision", err)
	}
	// Nothing to confirm: its lease was never aborted.
	if _, err := agent.ConfirmAbort(ctx, mine.ID, lease); apiErr(t, err).Status != http.StatusNotFound {
		t.Fatalf("confirm an abort nobody requested: %v, want 404", err)
	}
	// Other tasks and the ledger as a whole.
	ot := fmt.Sprint(other.ID)
	for _, c := range []struct{ method, path, body, perm, res string }{
		{"GET", "/v1/tasks/" + ot, "", "read", "/tasks/" + ot},
		{"POST", "/v1/tasks/" + ot + "/evidence", `{"kind":"k","body":"b"}`, "append", "/tasks/" + ot},
		{"POST", "/v1/tasks/" + fmt.Sprint(child.ID) + "/touch", `{}`, "append", auth.TaskResource(child.ID)},
		{"GET", "/v1/tasks", "", "read", "/tasks"},
		{"POST", "/v1/tasks", `{"type":"x"}`, "create", "/tasks"},
		{"POST", "/v1/tasks", `{"type":"x","parent_id":` + ot + `}`, "create", "/tasks/" + ot},
		{"POST", "/v1/tasks/claim", `{}`, "append", "/tasks"},
		{"GET", "/v1/tokens", "", "admin", "/"},
	} {
		status, body := f.do(t, agentTok, c.method, c.path, c.body)
		wantForbidden(t, status, body, c.perm, c.res)
	}
	if got, _ := f.store.Tasks.GetTask(ctx, mine.ID); got.State != "RUNNING" || got.Revision != 1 || len(got.Aborts) != 0 ||
		got.Current == nil || len(got.Current.Decisions) != 1 {
		t.Fatalf("task after refused operator calls: %s revision %d, %d aborts, current %+v; want RUNNING, unchanged, one decision",
			got.State, got.Revision, len(got.Aborts), got.Current)
	}
	// It can finish its task; with that its lease ends, and so does the
	// credential (401 at once).
	if _, err := agent.Complete(ctx, mine.ID, lease, false, "done"); err != nil {
		t.Fatalf("agent completes its task: %v", err)
	}
	if _, err := agent.GetTask(ctx, mine.ID); apiErr(t, err).Status != http.StatusUnauthorized {
		t.Fatalf("the credential of a completed claim: %v, want 401", err)
	}

	// Revoked while its lease runs: 401 at once.
	next, _, err := admin.CreateTask(ctx, cks.NewTask{Type: "build", Title: "next"})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err = worker.ClaimWithTokens(ctx, "w1", []string{"build"}, 1, time.Minute)
	if err != nil || len(claimed.Tasks) != 1 || claimed.Tasks[0].ID != next.ID {
		t.Fatalf("second claim: %+v, %v", claimed, err)
	}
	agent = client.New(f.srv.URL, claimed.AgentTokens[fmt.Sprint(next.ID)])
	if _, err := agent.GetTask(ctx, next.ID); err != nil {
		t.Fatalf("the second claim's credential: %v", err)
	}
	// It has no principal to list or revoke (a clear 400 says so); the
	// operator ends it by ending its lease.
	list, err := admin.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list {
		if strings.HasPrefix(p.Name, "task/") {
			t.Fatalf("a claim's credential is listed as a principal: %+v", p)
		}
	}
	if err := admin.RevokeToken(ctx, "task/"+fmt.Sprint(next.ID)); apiErr(t, err).Status != http.StatusBadRequest ||
		!strings.Contains(err.Error(), "lease") {
		t.Fatalf("revoke of a claim's credential: %v, want 400 saying it ends with the lease", err)
	}
	if _, err := agent.GetTask(ctx, next.ID); err != nil {
		t.Fatalf("the credential after a refused revoke: %v", err)
	}
	if _, err := admin.StopTask(ctx, next.ID, client.StopRequest{Reason: "cut it off", NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.GetTask(ctx, next.ID); apiErr(t, err).Status != http.StatusUnauthorized {
		t.Fatalf("the credential of a stopped task: %v, want 401", err)
	}
}

func TestTokensAPI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	admin := f.client()
	created, err := admin.CreateToken(ctx, cks.CreateTokenInput{Name: "ops",
		Grants: []cks.Grant{{Resource: "/tasks", Permission: "read"}, {Resource: "/sweepers", Permission: "control"}}})
	if err != nil {
		t.Fatal(err)
	}
	if created.Token == "" || created.ID == "" || created.Name != "ops" || len(created.Grants) != 2 {
		t.Fatalf("created %+v", created)
	}
	operator := client.New(f.srv.URL, created.Token)
	if _, err := operator.ListTasks(ctx, cks.TaskFilter{}); err != nil {
		t.Fatalf("new token reads tasks: %v", err)
	}
	if _, err := operator.ListTokens(ctx); apiErr(t, err).Status != http.StatusForbidden {
		t.Fatalf("non-admin lists tokens: %v, want 403", err)
	}
	status, body := f.do(t, f.token, "GET", "/v1/tokens", "")
	if status != http.StatusOK || strings.Contains(body, "hash") || strings.Contains(body, created.Token) || strings.Contains(body, f.token) {
		t.Fatalf("GET /v1/tokens: %d %s", status, body)
	}
	for _, c := range []struct{ body, field string }{
		{`{"name":"x","grants":[{"resource":"/tasks","permission":"write"}]}`, "permission"},
		{`{"name":"x","grants":[{"resource":"/tasks/abc","permission":"read"}]}`, "resource"},
		{`{"name":"x","grants":[{"resource":"tasks","permission":"read"}]}`, "resource"},
		{`{"name":"x"}`, "grants"},
		{`{"grants":[{"resource":"/","permission":"read"}]}`, "name"},
	} {
		status, body := f.do(t, f.token, "POST", "/v1/tokens", c.body)
		if e := decodeError(t, body); status != http.StatusBadRequest || e.Error.Field != c.field {
			t.Errorf("POST /v1/tokens %s: %d %s, want 400 on %s", c.body, status, body, c.field)
		}
	}
	if _, err := admin.CreateToken(ctx, cks.CreateTokenInput{TaskID: 999}); apiErr(t, err).Status != http.StatusNotFound {
		t.Fatalf("token for an unknown task: %v, want 404", err)
	}
	if err := admin.RevokeToken(ctx, "nobody"); apiErr(t, err).Status != http.StatusNotFound {
		t.Fatalf("revoke unknown: %v, want 404", err)
	}
	// The last admin cannot be revoked.
	list, err := admin.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var adminID string
	for _, p := range list {
		if auth.Allows(p.Grants, auth.PermAdmin, "/") {
			adminID = p.ID
		}
	}
	e := apiErr(t, admin.RevokeToken(ctx, adminID))
	if e.Status != http.StatusConflict || !strings.Contains(e.Message, "last") {
		t.Fatalf("revoke last admin: %v, want 409 saying it is the last", e)
	}
	if err := admin.RevokeToken(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := operator.ListTasks(ctx, cks.TaskFilter{}); apiErr(t, err).Status != http.StatusUnauthorized {
		t.Fatalf("revoked token: %v, want 401", err)
	}
}

// TestStudioNeedsRead: studio pages need read on what they show (the
// permissions of the operations they read through).
func TestStudioNeedsRead(t *testing.T) {
	f := newHubFixture(t, backendtest.SQLite(t))
	tasksOnly := f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermRead})
	if resp, body := f.get(t, "/tasks", tasksOnly); resp.StatusCode != http.StatusOK {
		t.Fatalf("task board with read on /tasks: %d %s", resp.StatusCode, body)
	}
	resp, body := f.get(t, "/", tasksOnly)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "needs read on /processes") {
		t.Fatalf("agent panel with read on /tasks only: %d %s", resp.StatusCode, body)
	}
	if resp, body := f.get(t, "/", f.tokenWith(t, cks.Grant{Resource: "/", Permission: auth.PermRead})); resp.StatusCode != http.StatusOK {
		t.Fatalf("agent panel with read on /: %d %s", resp.StatusCode, body)
	}
}
