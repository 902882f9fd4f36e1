package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
)

func (f *fixture) client() *client.Client { return client.New(f.srv.URL, f.token) }

func (f *fixture) post(t testing.TB, path, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String()
}

func apiErr(t testing.TB, err error) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want an API error", err)
	}
	return e
}

func TestTaskLifecycleOverHTTP(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	ctx := context.Background()

	a, created, err := c.CreateTask(ctx, cks.NewTask{Type: "research", Title: "a", Priority: 5,
		Payload: json.RawMessage(`{"q":"why"}`), DedupeKey: "k-a"})
	if err != nil || !created || a.State != "OPEN" {
		t.Fatalf("create: %+v created=%v err=%v", a, created, err)
	}
	again, created, err := c.CreateTask(ctx, cks.NewTask{Type: "research", Title: "a2", DedupeKey: "k-a"})
	if err != nil || created || again.ID != a.ID {
		t.Fatalf("dedupe: got %d created=%v err=%v, want task %d back", again.ID, created, err, a.ID)
	}
	b, _, err := c.CreateTask(ctx, cks.NewTask{Type: "research", Title: "b", DependsOn: []int64{a.ID}})
	if err != nil || b.State != "WAITING" {
		t.Fatalf("dependent: %+v %v", b, err)
	}

	claimed, err := c.Claim(ctx, "w1", []string{"research"}, 5, time.Minute)
	if err != nil || len(claimed) != 1 || claimed[0].ID != a.ID || claimed[0].LeaseToken == "" || claimed[0].Attempts != 1 {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	tok := claimed[0].LeaseToken
	if _, err := c.MarkRunning(ctx, a.ID, tok); err != nil {
		t.Fatal(err)
	}
	if held, err := c.Touch(ctx, a.ID, tok); err != nil || !held {
		t.Fatalf("touch: held=%v err=%v", held, err)
	}
	if _, err := c.AddEvidence(ctx, a.ID, tok, "note", "found it"); err != nil {
		t.Fatal(err)
	}
	done, err := c.Complete(ctx, a.ID, tok, false, "42")
	if err != nil || done.State != "COMPLETED" || done.Result != "42" {
		t.Fatalf("complete: %+v %v", done, err)
	}
	// The token is spent: a zombie's calls are refused, touch says not held.
	if _, err := c.Complete(ctx, a.ID, tok, false, "zombie"); apiErr(t, err).Code != "lease_lost" || apiErr(t, err).Status != 409 {
		t.Fatalf("complete with a spent token: %v, want 409 lease_lost", err)
	}
	if held, err := c.Touch(ctx, a.ID, tok); err != nil || held {
		t.Fatalf("touch with a spent token: held=%v err=%v, want false and no error", held, err)
	}
	got, err := c.GetTask(ctx, b.ID)
	if err != nil || got.State != "OPEN" {
		t.Fatalf("dependant after completion: %s %v, want OPEN", got.State, err)
	}
	full, err := c.GetTask(ctx, a.ID)
	if err != nil || len(full.Events) < 4 || len(full.CurrentEvidence()) != 1 || full.Result != "42" {
		t.Fatalf("show: %d events, %d evidence, result %q, %v", len(full.Events), len(full.CurrentEvidence()), full.Result, err)
	}

	// Ask and answer.
	claimed, _ = c.Claim(ctx, "w1", nil, 1, time.Minute)
	if len(claimed) != 1 || claimed[0].ID != b.ID {
		t.Fatalf("claim b: %+v", claimed)
	}
	asked, err := c.RequestInput(ctx, b.ID, claimed[0].LeaseToken, "which one?")
	if err != nil || asked.State != "NEEDS_INPUT" {
		t.Fatalf("request input: %+v %v", asked, err)
	}
	if none, _ := c.Claim(ctx, "w1", nil, 1, time.Minute); len(none) != 0 {
		t.Fatalf("a NEEDS_INPUT task was claimed: %+v", none)
	}
	answered, err := c.AnswerTask(ctx, b.ID, "the blue one")
	if err != nil || answered.State != "OPEN" || answered.Answer != "the blue one" {
		t.Fatalf("answer: %+v %v", answered, err)
	}
	// Cancel; the executor that held it would see lease_lost.
	claimed, _ = c.Claim(ctx, "w2", nil, 1, time.Minute)
	cancelled, err := c.CancelTask(ctx, b.ID, "not needed")
	if err != nil || cancelled.State != "CANCELLED" {
		t.Fatalf("cancel: %+v %v", cancelled, err)
	}
	if _, err := c.AddEvidence(ctx, b.ID, claimed[0].LeaseToken, "note", "late"); apiErr(t, err).Code != "lease_lost" {
		t.Fatalf("evidence after cancel: %v", err)
	}
	// An illegal transition names both states and changes nothing.
	_, err = c.AnswerTask(ctx, b.ID, "too late")
	if e := apiErr(t, err); e.Status != 409 || !strings.Contains(e.Message, "CANCELLED") {
		t.Fatalf("answer a cancelled task: %v", err)
	}
	if got, _ := c.GetTask(ctx, b.ID); got.State != "CANCELLED" || got.Answer != "the blue one" {
		t.Fatalf("refused answer changed the task: %+v", got)
	}
}

func TestTaskBadInput(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, method, path, body string
		status                   int
		field                    string
	}{
		{"empty type", "POST", "/v1/tasks", `{"type":""}`, 400, "type"},
		{"priority out of range", "POST", "/v1/tasks", `{"type":"t","priority":-1}`, 400, "priority"},
		{"priority wrong type", "POST", "/v1/tasks", `{"type":"t","priority":"high"}`, 400, "priority"},
		{"unknown field", "POST", "/v1/tasks", `{"type":"t","colour":"red"}`, 400, "colour"},
		{"missing dependency", "POST", "/v1/tasks", `{"type":"t","depends_on":[999]}`, 400, "depends_on"},
		{"not JSON", "POST", "/v1/tasks", `type=t`, 400, ""},
		{"unknown state filter", "GET", "/v1/tasks?state=DONE", ``, 400, "state"},
		{"bad limit", "GET", "/v1/tasks?limit=-3", ``, 400, "limit"},
		{"bad id", "GET", "/v1/tasks/abc", ``, 400, "task_id"},
		{"lease too long", "POST", "/v1/tasks/claim", `{"lease_s":1e9}`, 400, "lease_s"},
		{"empty answer", "POST", "/v1/tasks/1/answer", `{"text":" "}`, 400, "text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var resp *http.Response
			var body string
			if c.method == "GET" {
				resp, body = f.get(t, c.path, f.token)
			} else {
				resp, body = f.post(t, c.path, c.body)
			}
			if resp.StatusCode != c.status {
				t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, resp.StatusCode, body, c.status)
			}
			e := decodeError(t, body)
			if e.Error.Field != c.field {
				t.Fatalf("error %+v names field %q, want %q", e.Error, e.Error.Field, c.field)
			}
		})
	}
	page, err := f.client().ListTasks(context.Background(), cks.TaskFilter{})
	if err != nil || len(page.Tasks) != 0 {
		t.Fatalf("bad input created tasks: %d %v", len(page.Tasks), err)
	}
	resp, body := f.get(t, "/v1/tasks/12345", f.token)
	if resp.StatusCode != 404 || !strings.Contains(body, "12345") {
		t.Fatalf("unknown id: %d %s, want 404 naming the id", resp.StatusCode, body)
	}
}

func TestTaskListPaging(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	ctx := context.Background()
	for i := range 5 {
		typ := "a"
		if i%2 == 1 {
			typ = "b"
		}
		if _, _, err := c.CreateTask(ctx, cks.NewTask{Type: typ}); err != nil {
			t.Fatal(err)
		}
	}
	var ids []int64
	f2 := cks.TaskFilter{Limit: 2}
	for {
		page, err := c.ListTasks(ctx, f2)
		if err != nil {
			t.Fatal(err)
		}
		for _, t := range page.Tasks {
			ids = append(ids, t.ID)
		}
		if page.Next == 0 {
			break
		}
		f2.After = page.Next
	}
	if len(ids) != 5 {
		t.Fatalf("paged through %v, want 5 tasks", ids)
	}
	page, err := c.ListTasks(ctx, cks.TaskFilter{Types: []string{"b"}, States: []cks.TaskState{"OPEN"}})
	if err != nil || len(page.Tasks) != 2 {
		t.Fatalf("filter type b: %d tasks, %v", len(page.Tasks), err)
	}
	var body cks.CreatedTask
	resp, raw := f.post(t, "/v1/tasks", `{"type":"c","payload":{"x":[1,2]}}`)
	var compact bytes.Buffer
	if resp.StatusCode != 201 || json.Unmarshal([]byte(raw), &body) != nil ||
		json.Compact(&compact, body.Task.Payload) != nil || compact.String() != `{"x":[1,2]}` {
		t.Fatalf("create with object payload: %d %s", resp.StatusCode, raw)
	}
}

// TestCountTasksOverHTTP: GET /v1/tasks/counts is count_tasks (not get_task
// of a task "counts"), its filter in the query as list_tasks' is.
func TestCountTasksOverHTTP(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	ctx := context.Background()
	a, _, err := c.CreateTask(ctx, cks.NewTask{Type: "count", Title: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CreateTask(ctx, cks.NewTask{Type: "count", Title: "b", DependsOn: []int64{a.ID}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.CountTasks(ctx, cks.CountTasksInput{State: []string{"OPEN", "WAITING", "STOPPED"}})
	if err != nil || got.Total != 2 || got.Counts[cks.TaskOpen] != 1 || got.Counts[cks.TaskWaiting] != 1 ||
		len(got.Counts) != 3 {
		t.Fatalf("count_tasks = %+v, %v; want OPEN 1, WAITING 1, STOPPED 0", got, err)
	}
	all, err := c.CountTasks(ctx, cks.CountTasksInput{})
	if err != nil || all.Total != 2 || len(all.Counts) != 12 {
		t.Fatalf("count_tasks {} = %+v, %v; want 12 states, total 2", all, err)
	}
	_, err = c.CountTasks(ctx, cks.CountTasksInput{State: []string{"DONE"}})
	if e := apiErr(t, err); e.Status != http.StatusBadRequest || !strings.Contains(e.Message, "state") {
		t.Fatalf("count_tasks DONE: %+v", e)
	}
}
