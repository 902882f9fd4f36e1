package mcpserver_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// TestMCPDedupeHitRevealsNothingUnreadable: create_task with the dedupe_key
// of a task the caller may not read is a tool error naming neither the
// task's id nor its content; with read on the task the hit is returned.
func TestMCPDedupeHitRevealsNothingUnreadable(t *testing.T) {
	hs, e, _ := mcpOverAPI(t)
	secret, _, err := e.store.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "secret", Title: "the plan",
		Payload: []byte(`{"password":"hunter2"}`), DedupeKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"type": "x", "dedupe_key": "k"}
	cs := connectAs(t, hs.URL, token(t, e.store.Principals, cks.Grant{Resource: "/tasks", Permission: auth.PermCreate}))
	r := call(t, cs, mcpserver.ToolCreateTask, args)
	got := text(t, r)
	if !r.IsError || !strings.Contains(got, "dedupe_key") {
		t.Fatalf("create_task on a dedupe hit without read: IsError=%v %s, want a tool error naming dedupe_key", r.IsError, got)
	}
	for _, leak := range []string{"hunter2", "the plan", "secret", fmt.Sprint(secret.ID)} {
		if strings.Contains(got, leak) {
			t.Fatalf("the refusal discloses %q: %s", leak, got)
		}
	}
	cs = connectAs(t, hs.URL, token(t, e.store.Principals, cks.Grant{Resource: "/tasks", Permission: auth.PermCreate},
		cks.Grant{Resource: auth.TaskResource(secret.ID), Permission: auth.PermRead}))
	r = call(t, cs, mcpserver.ToolCreateTask, args)
	var out struct {
		Task    cks.Task `json:"task"`
		Created bool     `json:"created"`
	}
	decode(t, r, &out)
	if out.Created || out.Task.ID != secret.ID {
		t.Fatalf("create_task on a dedupe hit with read: %+v, want task %d with created false", out, secret.ID)
	}
}

// TestMCPCreatedByIsTheCaller: create_task records the authenticated
// principal as the creator and refuses an argument naming created_by.
func TestMCPCreatedByIsTheCaller(t *testing.T) {
	hs, e, _ := mcpOverAPI(t)
	cs := connectAs(t, hs.URL, token(t, e.store.Principals, cks.Grant{Resource: "/tasks", Permission: auth.PermCreate}))
	r := call(t, cs, mcpserver.ToolCreateTask, map[string]any{"type": "forged", "created_by": "admin"})
	if !r.IsError || !strings.Contains(text(t, r), "created_by") {
		t.Fatalf("create_task naming created_by: IsError=%v %s, want a tool error naming created_by", r.IsError, text(t, r))
	}
	if n, err := e.store.Tasks.CountTasks(ctx(t), cks.TaskFilter{Types: []string{"forged"}}); err != nil || n != 0 {
		t.Fatalf("tasks after the refused create: %d %v, want 0", n, err)
	}
	var out struct {
		Task cks.Task `json:"task"`
	}
	decode(t, call(t, cs, mcpserver.ToolCreateTask, map[string]any{"type": "mine"}), &out)
	if out.Task.CreatedBy != "p" {
		t.Fatalf("created_by = %q, want the principal p", out.Task.CreatedBy)
	}
}
