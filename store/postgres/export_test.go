package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// ListenerPIDs returns the backend process ids of s's live listener
// connections (one per running WatchChanges).
func ListenerPIDs(s *Store) []uint32 { return s.listen.list() }

// PublishAndRollBack publishes topic in a write transaction that then fails,
// so it rolls back.
func PublishAndRollBack(s *Store, ctx context.Context, topic string) error {
	return s.write(ctx, "test rollback", func(tx pgx.Tx, _ time.Time) error {
		if err := publish(ctx, tx, topic); err != nil {
			return err
		}
		return errRolledBack
	})
}

var errRolledBack = errors.New("rolled back on purpose")
