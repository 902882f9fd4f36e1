package ledger

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// Queued reports how many Complete, Fail and Heartbeat calls of s wait for the
// next flush of its completer.
func Queued(s *Service) int { return s.completer.Queued() }

// SetMaxFlushes sets how many flushes the completer of s runs at once.
func SetMaxFlushes(s *Service, n int) { s.completer.Max = n }

// ClaimsQueued reports how many claims of s wait for the next batch of its
// claimer.
func ClaimsQueued(s *Service) int { return s.claimer.Queued() }

// SetMaxClaims sets how many claim batches s runs at once.
func SetMaxClaims(s *Service, n int) { s.claimer.Max = n }

// MoveWith moves task id of s to state to through transition, in one write
// transaction, with set changing the row's other columns as a move's set
// does, and returns the row as written.
func MoveWith(ctx context.Context, s *Service, id int64, to cks.TaskState, set func(r *driver.TaskRow)) (driver.TaskRow, error) {
	var out driver.TaskRow
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		cur, err := getRow(ctx, ex, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		out, err = moveOne(ctx, ex, now, move{row: cur, to: to, set: set, actor: "test", reason: "test"})
		return err
	})
	return out, err
}

// MoveRow moves row, as given (not read), to state to through transition in
// one write transaction, with set as MoveWith's.
func MoveRow(ctx context.Context, s *Service, row driver.TaskRow, to cks.TaskState, set func(r *driver.TaskRow)) error {
	return s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		_, err := moveOne(ctx, ex, now, move{row: row, to: to, set: set, actor: "test", reason: "test"})
		return err
	})
}

// WrapStatsRead makes TaskStats' cache of s read through wrap(the read),
// and calls waiting each time a caller starts waiting for another's read.
func WrapStatsRead(s *Service, wrap func(read func(ctx context.Context, w StatsWindow) (cks.TaskStats, error)) func(ctx context.Context, w StatsWindow) (cks.TaskStats, error), waiting func()) {
	s.stats.read, s.stats.waiting = wrap(s.stats.read), waiting
}

// CountTypesReads makes UnclaimedTypes' cache of s count its reads of the
// store in n.
func CountTypesReads(s *Service, n *atomic.Int64) {
	read := s.types.read
	s.types.read = func(ctx context.Context, k struct{}) (typesRead, error) {
		n.Add(1)
		return read(ctx, k)
	}
}

// RoomReads is how often the waiting room of s read the ledger.
func RoomReads(s *Service) int64 { return s.room.reads.Load() }

// RoomSpared is how many waiting claims of s went straight to waiting,
// their first look spared by what the room knew.
func RoomSpared(s *Service) int64 { return s.room.spared.Load() }

// RoomKnows reports whether the waiting room of s holds what its last read
// found.
func RoomKnows(s *Service) bool {
	s.room.mu.Lock()
	defer s.room.mu.Unlock()
	return s.room.known.valid
}

// Transition moves task id of s to state to through the transition table,
// recording an event by actor with reason, and nothing else: no lease,
// dependency or attempt effects (the table's own test, and the setups that
// must reach a state behind the operations' back).
func Transition(ctx context.Context, s *Service, id int64, to cks.TaskState, actor, reason string) (cks.Task, error) {
	return s.onTask(ctx, id, func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error) {
		return moveOne(ctx, ex, now, move{row: cur, to: to, actor: actor, reason: reason})
	})
}

// SetOutputTail sets how many bytes of output each attempt of s keeps
// (cks.DefaultOutputTail when n <= 0).
func SetOutputTail(s *Service, n int64) { s.outputTail = n }
