package waitfor_test

import (
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/waitfor"
)

// TestUntil: Until returns once the condition holds, having checked it
// until then, and not before.
func TestUntil(t *testing.T) {
	calls := 0
	waitfor.Until(t, "the third call", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Fatalf("checked %d times, want 3", calls)
	}
}

// TestCtx: the context ends Limit after it was made.
func TestCtx(t *testing.T) {
	before := time.Now()
	ctx := waitfor.Ctx(t)
	after := time.Now()
	deadline, ok := ctx.Deadline()
	if !ok || deadline.Before(before.Add(waitfor.Limit)) || deadline.After(after.Add(waitfor.Limit)) || ctx.Err() != nil {
		t.Fatalf("deadline %v (set %v), err %v; want %v after it was made", deadline, ok, ctx.Err(), waitfor.Limit)
	}
}
