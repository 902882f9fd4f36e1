package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cks-dev/cks"
)

// Watcher is what the ledger needs of the change notifications: the abort
// confirmations an operator's stop waits for (cks.TopicTaskAborts). The
// process's notifier.Notifier is one.
type Watcher interface {
	WatchChanges(ctx context.Context, topics []string, f func(topic string)) error
}

// StopParams is one operator stop (StopTask).
type StopParams struct {
	ID     int64
	Actor  string
	Reason string
	// Deadline bounds the abort: how long the executor has to confirm it
	// (0: cks.DefaultAbortDeadline).
	Deadline time.Duration
	// Wait makes StopTask wait up to Deadline for the confirmation.
	Wait bool
}

// UpdateParams is one operator update (UpdateTask).
type UpdateParams struct {
	ID    int64
	Actor string
	Patch cks.TaskPatch
	// Deadline and Wait are StopParams' for the abort of a running task's
	// stop → apply → start.
	Deadline time.Duration
	Wait     bool
}

// StopTask is the operator's stop (ADR 0020): it holds the task in STOPPED
// (Stop) and, when that revoked a running executor's lease and p.Wait is
// set, waits up to the deadline for the executor to confirm the abort. The
// returned abort is then AbortConfirmed or AbortUnconfirmed, and so is the
// stored one. Without Wait the abort is returned pending; its outcome is
// settled later by the executor's confirmation or by ExpireAborts. The API,
// MCP server and CLI all call it, so the wait and its outcome behave the
// same everywhere.
func (s *Service) StopTask(ctx context.Context, p StopParams) (cks.TaskStopResult, error) {
	deadline, err := cks.ValidateDeadline(p.Deadline)
	if err != nil {
		return cks.TaskStopResult{}, err
	}
	t, ab, from, err := s.stop(ctx, p.ID, p.Actor, p.Reason, deadline)
	if err != nil || ab == nil || !p.Wait {
		return cks.TaskStopResult{Task: t, From: from, Abort: ab}, err
	}
	got, err := s.WaitAbort(ctx, ab.ID, deadline)
	return cks.TaskStopResult{Task: t, From: from, Abort: &got}, err
}

// UpdateTask is the operator's update: Update, and when that restarted a
// running task and p.Wait is set, the wait for the abort confirmation as
// StopTask does; the task is already claimable again meanwhile (the old
// executor is fenced off by its revoked lease).
func (s *Service) UpdateTask(ctx context.Context, p UpdateParams) (cks.UpdateResult, error) {
	deadline, err := cks.ValidateDeadline(p.Deadline)
	if err != nil {
		return cks.UpdateResult{}, err
	}
	res, err := s.Update(ctx, p.ID, p.Actor, p.Patch, deadline)
	if err != nil || res.Abort == nil || !p.Wait {
		return res, err
	}
	got, err := s.WaitAbort(ctx, res.Abort.ID, deadline)
	res.Abort = &got
	return res, err
}

// errNoWatcher is WaitAbort's error on a service built without a Watcher.
var errNoWatcher = errors.New("ledger: no change watcher to wait for an abort's confirmation")

// WaitAbort waits up to d for abort abortID to be confirmed, woken by
// cks.TopicTaskAborts, and declares it unconfirmed when d passes first
// (ResolveAbort, which returns it confirmed if the confirmation won the
// race). When ctx ends first it returns the abort as it stands with ctx's
// error; the ledger settles it at its deadline.
func (s *Service) WaitAbort(ctx context.Context, abortID int64, d time.Duration) (cks.Abort, error) {
	if s.changes == nil {
		return cks.Abort{}, errNoWatcher
	}
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
	werr := s.changes.WatchChanges(wctx, []string{cks.TopicTaskAborts}, func(string) {
		last, lastErr = s.GetAbort(wctx, abortID)
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
	return s.ResolveAbort(ctx, abortID)
}
