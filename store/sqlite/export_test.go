package sqlite

import (
	"context"
	"errors"
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
