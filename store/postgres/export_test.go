package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/cks-dev/cks/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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

// Classify is classify, for the tests of SQLSTATEs a test server cannot
// be made to answer (disk_full).
var Classify = classify

// OpenUnchecked opens a handle on url without Open's read-only check and
// schema step, for a database whose schema exists and whose URL makes every
// transaction read-only (default_transaction_read_only=on): the state of a
// hub whose primary turned read-only after it started.
func OpenUnchecked(ctx context.Context, url string, opts ...store.Option) (*Store, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, err
	}
	return &Store{clock: store.ApplyOptions(opts).Clock, pool: pool}, nil
}
