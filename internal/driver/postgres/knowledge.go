package postgres

import (
	"context"
	"errors"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/postgres/internal/dbsqlc"
	"github.com/jackc/pgx/v5"
)

// The knowledge primitives. A bulk primitive sends its single-row
// statement once per row in one pgx batch: one round trip, in the
// surrounding transaction (outside one, the batch is its own).

// ObjectUpdateMany implements driver.KnowledgeExecutor: one batch for the
// rows with content and one for those without.
func (e *executor) ObjectUpdateMany(ctx context.Context, rows []driver.ObjectRow) (int, error) {
	var (
		plain   []dbsqlc.ObjectUpdateParams
		content []dbsqlc.ObjectUpdateWithContentParams
	)
	for _, o := range rows {
		if o.Content != nil {
			content = append(content, objectUpdateWithContentParams(o))
			continue
		}
		plain = append(plain, objectUpdateParams(o))
	}
	n := 0
	var errs []error
	count := func(_ int, _ int64, err error) {
		switch {
		case err == nil:
			n++
		case !errors.Is(err, pgx.ErrNoRows): // no such object: not written, not an error
			errs = append(errs, err)
		}
	}
	if len(plain) > 0 {
		e.d.q.ObjectUpdate(ctx, e.db, plain).QueryRow(count)
	}
	if len(content) > 0 && len(errs) == 0 {
		e.d.q.ObjectUpdateWithContent(ctx, e.db, content).QueryRow(count)
	}
	if err := firstErr(errs); err != nil {
		return 0, mapErr("object update", err)
	}
	return n, nil
}

// batchIDs reads the n ids a batch of inserts returns, in input order,
// through the batch's QueryRow; what names the primitive in errors.
func batchIDs(n int, what string, queryRow func(func(int, int64, error))) ([]int64, error) {
	ids := make([]int64, n)
	var errs []error
	queryRow(func(i int, id int64, err error) {
		ids[i] = id
		errs = append(errs, err)
	})
	if err := firstErr(errs); err != nil {
		return nil, mapErr(what, err)
	}
	return ids, nil
}

// firstErr returns the first non-nil error of a batch's results: after a
// failed statement, Postgres aborts the rest, whose errors only repeat it.
func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
