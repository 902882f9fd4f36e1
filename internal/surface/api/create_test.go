package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/auth"
)

// mustDo is do failing the test unless the answer is 2xx.
func (f *fixture) mustDo(t testing.TB, token, method, path, body string) string {
	t.Helper()
	status, out := f.do(t, token, method, path, body)
	if status/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, status, out)
	}
	return out
}

// TestDedupeHitRevealsNothingUnreadable: a caller that may create tasks but
// not read an existing one learns nothing of it from its dedupe_key — a 409
// naming neither its id nor its content — while a caller that may read it
// gets it back with created false, as before.
func TestDedupeHitRevealsNothingUnreadable(t *testing.T) {
	f := newFixture(t)
	out := f.mustDo(t, f.token, "POST", "/v1/tasks", `{"type":"secret","title":"the plan","payload":{"password":"hunter2"},"dedupe_key":"k"}`)
	var created struct {
		Task struct {
			ID int64 `json:"task_id"`
		} `json:"task"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Task.ID == 0 {
		t.Fatalf("create: %s", out)
	}
	body := `{"type":"x","dedupe_key":"k"}`
	creator := f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermCreate})
	status, got := f.do(t, creator, "POST", "/v1/tasks", body)
	if status != http.StatusConflict {
		t.Fatalf("dedupe hit without read: %d %s, want 409", status, got)
	}
	if e := decodeError(t, got); e.Error.Code != "conflict" || !strings.Contains(e.Error.Message, "dedupe_key") {
		t.Fatalf("dedupe hit without read: %s, want a conflict naming dedupe_key", got)
	}
	for _, secret := range []string{"hunter2", "the plan", "secret", fmt.Sprintf("%d", created.Task.ID)} {
		if strings.Contains(got, secret) {
			t.Fatalf("the refusal discloses %q: %s", secret, got)
		}
	}
	// With read on the task, the hit is returned as it always was.
	reader := f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermCreate},
		cks.Grant{Resource: auth.TaskResource(created.Task.ID), Permission: auth.PermRead})
	status, got = f.do(t, reader, "POST", "/v1/tasks", body)
	if status != http.StatusOK || !strings.Contains(got, `"created":false`) || !strings.Contains(got, "hunter2") {
		t.Fatalf("dedupe hit with read: %d %s, want 200 with the task and created false", status, got)
	}
	if n, err := f.store.Tasks.CountTasks(t.Context(), cks.TaskFilter{}); err != nil || n != 1 {
		t.Fatalf("tasks after the dedupe hits: %d %v, want 1", n, err)
	}
}

// TestCreatedByIsTheCaller: the creator recorded for a task is the
// authenticated principal; a request naming created_by (also in a child of
// an update) is refused with a 400 naming the field and changes nothing.
func TestCreatedByIsTheCaller(t *testing.T) {
	f := newFixture(t)
	agent := f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermCreate},
		cks.Grant{Resource: "/tasks", Permission: auth.PermUpdate})
	for _, c := range []struct{ method, path, body, field string }{
		{"POST", "/v1/tasks", `{"type":"x","created_by":"admin"}`, "created_by"},
		{"POST", "/v1/tasks", `{"type":"x","created_by":""}`, "created_by"},
	} {
		status, body := f.do(t, agent, c.method, c.path, c.body)
		if e := decodeError(t, body); status != http.StatusBadRequest || e.Error.Field != c.field {
			t.Errorf("%s %s %s: %d %s, want 400 naming %s", c.method, c.path, c.body, status, body, c.field)
		}
	}
	if n, err := f.store.Tasks.CountTasks(t.Context(), cks.TaskFilter{}); err != nil || n != 0 {
		t.Fatalf("tasks after refused creates: %d %v, want 0", n, err)
	}
	out := f.mustDo(t, agent, "POST", "/v1/tasks", `{"type":"x"}`)
	var created struct {
		Task cks.Task `json:"task"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Task.CreatedBy != "p" {
		t.Fatalf("created_by = %q (%s), want the principal p", created.Task.CreatedBy, out)
	}
	path := fmt.Sprintf("/v1/tasks/%d", created.Task.ID)
	status, body := f.do(t, agent, "PATCH", path, `{"add_children":[{"type":"c","created_by":"admin"}]}`)
	if e := decodeError(t, body); status != http.StatusBadRequest || !strings.HasSuffix(e.Error.Field, "created_by") {
		t.Fatalf("PATCH with a child naming created_by: %d %s, want 400 naming created_by", status, body)
	}
	f.mustDo(t, agent, "PATCH", path, `{"add_children":[{"type":"c"}]}`)
	page, err := f.store.Tasks.ListTasks(t.Context(), cks.TaskFilter{Types: []string{"c"}})
	if err != nil || len(page.Tasks) != 1 || page.Tasks[0].CreatedBy != "p" {
		t.Fatalf("children: %+v %v, want one created by p", page.Tasks, err)
	}
	if got := backendtest.MustGet(t, f.store, page.Tasks[0].ID); got.Events[0].Actor != "p" {
		t.Fatalf("the child's creation event names %q, want p", got.Events[0].Actor)
	}
}
