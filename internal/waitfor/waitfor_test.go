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

// TestCtx: the context ends at Limit, not before.
func TestCtx(t *testing.T) {
	ctx := waitfor.Ctx(t)
	deadline, ok := ctx.Deadline()
	if !ok || time.Until(deadline) < waitfor.Limit-time.Second || ctx.Err() != nil {
		t.Fatalf("deadline %v (set %v), err %v; want about %v from now", deadline, ok, ctx.Err(), waitfor.Limit)
	}
}
