package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PublishAndRollBack publishes topic in a write transaction that then fails,
// so it rolls back.
func PublishAndRollBack(s *Store, ctx context.Context, topic string) error {
	return s.write(ctx, "test rollback", func(tx *wtx, _ time.Time) error {
		if err := publish(ctx, tx, topic); err != nil {
			return err
		}
		return errors.New("rolled back on purpose")
	})
}

// The statements of the knowledge store whose query plans the tests check.
const (
	ClaimObjectsSQL  = claimObjectsSQL
	ReleaseStaleSQL  = releaseStaleSQL
	ForkedObjectsSQL = forkedObjectsSQL
	// CountHeadsSQL is how every version write recounts an object's heads.
	CountHeadsSQL = `UPDATE cks_objects SET heads = ` + countHeadsSQL + ` WHERE object_id = ?`
)

// ClaimStatements returns the two statements of a claim of n tasks of types
// by worker at now, each with its arguments: the candidate query, and the
// update of the tasks ids to CLAIMED.
func ClaimStatements(worker string, types []string, n int, now time.Time, ids []int64) (candidates string, cargs []any, update string, uargs []any) {
	candidates, cargs = claimCandidates(now, types, n)
	_, hashes, idList := leaseTokens(ids)
	update, uargs = claimMove(worker, now, time.Hour, idList, hashes).statement(now)
	return candidates, cargs, update, uargs
}

// CapPages caps the database at its current size plus extra pages for the
// writer connection (PRAGMA max_page_count), so that a test can fill it as
// a full disk would: a write past the cap fails with SQLITE_FULL.
func CapPages(s *Store, ctx context.Context, extra int) error {
	var n int
	if err := s.writer.QueryRowContext(ctx, "PRAGMA page_count").Scan(&n); err != nil {
		return err
	}
	_, err := s.writer.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", n+extra))
	return err
}
