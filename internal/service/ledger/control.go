package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
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
// (stop: a running executor's lease revoked, its attempt given back, an
// abort requested of it) and, when that revoked a running executor's lease
// and p.Wait is set, waits up to the deadline for the executor to confirm
// the abort. The returned abort is then AbortConfirmed or
// AbortUnconfirmed, and so is the stored one. Without Wait the abort is
// returned pending; its outcome is settled later by the executor's
// confirmation or by ExpireAborts. The API, MCP server and CLI all call
// it, so the wait and its outcome behave the same everywhere.
func (s *Service) StopTask(ctx context.Context, p StopParams) (cks.TaskStopResult, error) {
	res, deadline, err := s.stop(ctx, p)
	if err != nil || res.Abort == nil || !p.Wait {
		return res, err
	}
	got, err := s.waitAbort(ctx, res.Abort.ID, deadline)
	res.Abort = &got
	return res, err
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
	res, err := s.update(ctx, p.ID, p.Actor, p.Patch, deadline)
	if err != nil || res.Abort == nil || !p.Wait {
		return res, err
	}
	got, err := s.waitAbort(ctx, res.Abort.ID, deadline)
	res.Abort = &got
	return res, err
}

// errNoWatcher is waitAbort's error on a service built without a Watcher.
var errNoWatcher = errors.New("ledger: no change watcher to wait for an abort's confirmation")

// waitAbort waits up to d for abort abortID to be confirmed, woken by
// cks.TopicTaskAborts, and declares it unconfirmed when d passes first
// (resolveAborts, which returns it confirmed if the confirmation won the
// race). When ctx ends first it returns the abort as it stands with ctx's
// error; the ledger settles it at its deadline. It is waitAborts of one.
func (s *Service) waitAbort(ctx context.Context, abortID int64, d time.Duration) (cks.Abort, error) {
	got, err := s.waitAborts(ctx, []int64{abortID}, d)
	a, ok := got[abortID]
	if !ok && err == nil {
		err = fmt.Errorf("abort %d: %w", abortID, cks.ErrNotFound)
	}
	return a, err
}

// waitAborts is waitAbort of the aborts ids at once, up to d for them all:
// at every wake-up the ones still pending are read again in one read
// (AbortGetMany), and those still pending when d passes are declared
// unconfirmed in one transaction (resolveAborts). It returns each abort as
// it stands, by id; an id that is no abort is absent.
func (s *Service) waitAborts(ctx context.Context, ids []int64, d time.Duration) (map[int64]cks.Abort, error) {
	if s.changes == nil {
		return nil, errNoWatcher
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		got     = map[int64]cks.Abort{}
		pending = slices.Clone(ids)
		lastErr error
		settled bool
	)
	// f runs once when the watch is established (so nothing before it is
	// missed) and again at every change of the topic. It may never run when
	// d passes before the watch is established.
	werr := s.changes.WatchChanges(wctx, []string{cks.TopicTaskAborts}, func(string) {
		rows, err := s.db.Executor().AbortGetMany(wctx, driver.AbortGetManyParams{IDs: pending})
		if lastErr = err; err != nil {
			return
		}
		var still []int64
		for _, a := range rows {
			got[a.ID] = toAbort(a)
			if a.Outcome == string(cks.AbortPending) {
				still = append(still, a.ID)
			}
		}
		if pending = still; len(pending) == 0 {
			settled = true
			cancel()
		}
	})
	switch {
	case werr != nil:
		return got, fmt.Errorf("wait for aborts %v: %w", ids, werr)
	case settled:
		return got, nil
	case ctx.Err() != nil:
		return got, fmt.Errorf("wait for aborts %v: %w", ids, ctx.Err())
	case lastErr != nil && !errors.Is(lastErr, context.DeadlineExceeded) && !errors.Is(lastErr, context.Canceled):
		return got, lastErr
	}
	resolved, err := s.resolveAborts(ctx, pending)
	maps.Copy(got, resolved)
	return got, err
}
