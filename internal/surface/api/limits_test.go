package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
)

// TestLimitsOverHTTP: the Go client sets, lists and deletes a limit over
// HTTP, and a task created with keys carries them; bad input (a cap of 0, a
// pattern with * inside, a key of 10 KB, five keys) is a 400 naming the
// field that changes nothing.
func TestLimitsOverHTTP(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	ctx := context.Background()

	l, err := c.SetLimit(ctx, cks.LimitInput{Name: "openai", Pattern: "openai:*", MaxRunning: 4})
	if err != nil || l.Name != "openai" || l.MaxRunning != 4 || l.CreatedBy == "" || l.CreatedAt.IsZero() {
		t.Fatalf("set: %+v %v", l, err)
	}
	for _, c2 := range []struct {
		in    cks.LimitInput
		field string
	}{
		{cks.LimitInput{Name: "x", Pattern: "x", MaxRunning: 0}, "max_running"},
		{cks.LimitInput{Name: "x", Pattern: "open*ai", MaxRunning: 1}, "pattern"},
		{cks.LimitInput{Name: "x", Pattern: "openai:*", MaxRunning: 1}, "pattern"},
		{cks.LimitInput{Name: "x/y", Pattern: "x", MaxRunning: 1}, "name"},
	} {
		_, err := c.SetLimit(ctx, c2.in)
		if e := apiErr(t, err); e.Status != 400 || e.Field != c2.field {
			t.Errorf("set %+v: %+v, want a 400 on %s", c2.in, e, c2.field)
		}
	}
	for _, keys := range [][]string{{strings.Repeat("k", 10<<10)}, {"a", "b", "c", "d", "e"}, {"a b"}} {
		_, _, err := c.CreateTask(ctx, cks.NewTask{Type: "llm", Title: "t", ConcurrencyKeys: keys})
		if e := apiErr(t, err); e.Status != 400 || !strings.HasPrefix(e.Field, "concurrency_keys") {
			t.Errorf("create with keys %.30q: %+v, want a 400 on concurrency_keys", keys, e)
		}
	}
	task, _, err := c.CreateTask(ctx, cks.NewTask{Type: "llm", Title: "t", ConcurrencyKeys: []string{"openai:gpt-5"}})
	if err != nil || len(task.ConcurrencyKeys) != 1 || task.ConcurrencyKeys[0] != "openai:gpt-5" {
		t.Fatalf("create with a key: %+v %v", task, err)
	}
	list, err := c.Limits(ctx)
	if err != nil || len(list) != 1 || list[0].Limit != l || list[0].Held != 0 {
		t.Fatalf("limits: %+v %v; want [%+v] with no key held", list, err, l)
	}
	if d, err := c.DeleteLimit(ctx, "openai"); err != nil || !d.Deleted {
		t.Fatalf("delete: %+v %v", d, err)
	}
	if list, err := c.Limits(ctx); err != nil || len(list) != 0 {
		t.Fatalf("limits after delete: %+v %v", list, err)
	}
}
