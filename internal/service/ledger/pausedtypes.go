package ledger

import (
	"context"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// PauseTypeParams are pause_type's: the type, who pauses it and why.
type PauseTypeParams struct {
	Type   string
	Actor  string
	Reason string
}

// PauseType pauses a task type fleet-wide (issue 42): from its commit on,
// no claim of any hub or agent on the database hands out a task of the type
// (the claim statements skip a type with a row in cks_paused_types), while
// the attempts already running finish as they would. Pausing a paused type
// changes nothing and returns the pause in force (who paused it first and
// why). The type need not have tasks: a type may be paused before its first
// task arrives.
func (s *Service) PauseType(ctx context.Context, p PauseTypeParams) (cks.PausedType, error) {
	var out cks.PausedType
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		added, err := ex.TypePause(ctx, driver.PausedTypeRow{Type: p.Type, PausedBy: p.Actor, Reason: p.Reason, PausedAt: now})
		if err != nil {
			return err
		}
		r, err := ex.TypePausedGet(ctx, p.Type)
		if err != nil {
			return err
		}
		out = toPausedType(r)
		if added {
			return ex.Notify(ctx, cks.TopicFlowControl)
		}
		return nil
	})
	return out, err
}

// ResumeType lifts a type's pause; its OPEN tasks are claimable again at
// once (the waiting claims are woken by TopicTasksReady in the same
// commit). Resuming a type that is not paused changes nothing
// (Resumed false).
func (s *Service) ResumeType(ctx context.Context, typ string) (cks.TypeResumed, error) {
	out := cks.TypeResumed{Type: typ}
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, _ time.Time) error {
		var err error
		if out.Resumed, err = ex.TypeResume(ctx, typ); err != nil || !out.Resumed {
			return err
		}
		if err := ex.Notify(ctx, cks.TopicFlowControl); err != nil {
			return err
		}
		return ex.Notify(ctx, cks.TopicTasksReady)
	})
	return out, err
}

// PausedTypes returns the paused types, by type.
func (s *Service) PausedTypes(ctx context.Context) ([]cks.PausedType, error) {
	var rows []driver.PausedTypeRow
	err := s.read(ctx, func(ctx context.Context, ex driver.Executor) error {
		var err error
		rows, err = ex.TypePausedList(ctx)
		return err
	})
	out := make([]cks.PausedType, len(rows))
	for i, r := range rows {
		out[i] = toPausedType(r)
	}
	return out, err
}

func toPausedType(r driver.PausedTypeRow) cks.PausedType {
	return cks.PausedType{Type: r.Type, PausedBy: r.PausedBy, Reason: r.Reason, PausedAt: r.PausedAt}
}
