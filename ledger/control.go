package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/store"
)

// ControlStore is what Control needs of a store: the operator operations and
// the change notifications that carry abort confirmations.
type ControlStore interface {
	store.TaskControl
	store.Changes
}

// Control is the operator surface of the ledger (ADR 0020): stop, start and
// update, each one store transaction, plus the bounded wait for the executor
// of a running task to confirm its abort. The API, MCP server and CLI all
// call it, so the wait and its outcome behave the same everywhere.
type Control struct {
	st ControlStore
}

// NewControl returns a Control over st.
func NewControl(st ControlStore) *Control { return &Control{st: st} }

// Stop holds task id in STOPPED (store.TaskControl.Stop) and, when that
// revoked a running executor's lease and wait is set, waits up to deadline
// (0: cks.DefaultAbortDeadline) for the executor to confirm the abort. The
// returned abort is then AbortConfirmed or AbortUnconfirmed, and so is the
// stored one. Without wait the abort is returned pending; its outcome is
// settled later by the executor's confirmation or by Tasks.ExpireAborts.
func (c *Control) Stop(ctx context.Context, id int64, actor, reason string, deadline time.Duration, wait bool) (cks.TaskStopResult, error) {
	deadline, err := cks.ValidateDeadline(deadline)
	if err != nil {
		return cks.TaskStopResult{}, err
	}
	t, ab, err := c.st.Stop(ctx, id, actor, reason, deadline)
	if err != nil || ab == nil || !wait {
		return cks.TaskStopResult{Task: t, Abort: ab}, err
	}
	got, err := c.WaitAbort(ctx, ab.ID, deadline)
	return cks.TaskStopResult{Task: t, Abort: &got}, err
}

// Start releases a STOPPED task (store.TaskControl.Start).
func (c *Control) Start(ctx context.Context, id int64, actor, reason string) (cks.Task, error) {
	return c.st.Start(ctx, id, actor, reason)
}

// Update applies p as one operation (store.TaskControl.Update). When that
// restarted a running task and wait is set, it then waits for the abort
// confirmation as Stop does; the task is already claimable again meanwhile
// (the old executor is fenced off by its revoked lease).
func (c *Control) Update(ctx context.Context, id int64, actor string, p cks.TaskPatch, deadline time.Duration, wait bool) (cks.UpdateResult, error) {
	deadline, err := cks.ValidateDeadline(deadline)
	if err != nil {
		return cks.UpdateResult{}, err
	}
	res, err := c.st.Update(ctx, id, actor, p, deadline)
	if err != nil || res.Abort == nil || !wait {
		return res, err
	}
	got, err := c.WaitAbort(ctx, res.Abort.ID, deadline)
	res.Abort = &got
	return res, err
}

// WaitAbort waits up to d for abort abortID to be confirmed, woken by
// cks.TopicTaskAborts, and declares it unconfirmed when d passes first
// (store.TaskControl.ResolveAbort, which returns it confirmed if the
// confirmation won the race). When ctx ends first it returns the abort as
// it stands with ctx's error; the store settles it at its deadline.
func (c *Control) WaitAbort(ctx context.Context, abortID int64, d time.Duration) (cks.Abort, error) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		last    cks.Abort
		lastErr error
		settled bool
	)
	// f runs once when the watch is established (so nothing before it is
	// missed) and again at every change of the topic. It may never run when
	// d passes before the watch is established.
	werr := c.st.WatchChanges(wctx, []string{cks.TopicTaskAborts}, func(string) {
		last, lastErr = c.st.GetAbort(wctx, abortID)
		if lastErr == nil && last.Outcome != cks.AbortPending {
			settled = true
			cancel()
		}
	})
	switch {
	case werr != nil:
		return last, fmt.Errorf("wait for abort %d: %w", abortID, werr)
	case settled:
		return last, nil
	case ctx.Err() != nil:
		return last, fmt.Errorf("wait for abort %d: %w", abortID, ctx.Err())
	case lastErr != nil && !errors.Is(lastErr, context.DeadlineExceeded) && !errors.Is(lastErr, context.Canceled):
		return last, lastErr
	}
	return c.st.ResolveAbort(ctx, abortID)
}
