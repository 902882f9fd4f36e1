package api_test

import (
	"context"
	"testing"
)

// TestTypesOverHTTP: the Go client pauses, lists and resumes a type over
// HTTP; a malformed type is a 400 naming type that pauses nothing.
func TestTypesOverHTTP(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	ctx := context.Background()

	p, err := c.PauseType(ctx, "repo/build", "provider down")
	if err != nil || p.Type != "repo/build" || p.Reason != "provider down" || p.PausedBy == "" || p.PausedAt.IsZero() {
		t.Fatalf("pause: %+v %v", p, err)
	}
	_, err = c.PauseType(ctx, "bad type", "")
	if e := apiErr(t, err); e.Status != 400 || e.Field != "type" {
		t.Fatalf("pause of a malformed type: %+v", e)
	}
	list, err := c.PausedTypes(ctx)
	if err != nil || len(list) != 1 || list[0] != p {
		t.Fatalf("paused types: %+v %v; want [%+v]", list, err, p)
	}
	r, err := c.ResumeType(ctx, "repo/build")
	if err != nil || !r.Resumed {
		t.Fatalf("resume: %+v %v", r, err)
	}
	if list, err := c.PausedTypes(ctx); err != nil || len(list) != 0 {
		t.Fatalf("paused types after resume: %+v %v", list, err)
	}
}
