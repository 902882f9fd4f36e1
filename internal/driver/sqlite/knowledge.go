package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/sqlite/internal/dbsqlc"
)

// The knowledge primitives. A bulk primitive runs its single-row statement
// once per row inside one write transaction; SQLite has no round trip to
// save, and the statement is prepared once (stmtCache). Locks are no-ops:
// the one writer serialises every write.

// ObjectGetMany implements driver.KnowledgeExecutor.
func (e *executor) ObjectGetMany(ctx context.Context, p driver.ObjectGetManyParams) ([]driver.ObjectRow, error) {
	if err := objectLock(p.Lock); err != nil {
		return nil, err
	}
	if len(p.IDs) == 0 {
		return nil, nil
	}
	rows, err := e.d.q.ObjectGetMany(ctx, e.read, jsonList(p.IDs))
	if err != nil {
		return nil, mapErr("object get", err)
	}
	return objectRowsOf(rows)
}

// objectLock refuses a lock ObjectGetMany does not take (the contract names
// LockNone and LockUpdate), so that a caller's mistake shows on SQLite too,
// where every lock is a no-op.
func objectLock(l driver.Lock) error {
	if l != driver.LockNone && l != driver.LockUpdate {
		return fmt.Errorf("sqlite: object get with lock %d: only LockNone and LockUpdate are taken", l)
	}
	return nil
}

// ObjectUpdateMany implements driver.KnowledgeExecutor.
func (e *executor) ObjectUpdateMany(ctx context.Context, rows []driver.ObjectRow) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	var n int64
	err := e.write(ctx, "object update", func(w *wtx) error {
		n = 0
		for _, o := range rows {
			var (
				c   int64
				err error
			)
			if o.Content != nil {
				c, err = e.d.q.ObjectUpdateWithContent(ctx, w, dbsqlc.ObjectUpdateWithContentParams{
					CurrentStatus: o.CurrentStatus,
					ClaimedBy:     o.ClaimedBy,
					ClaimToken:    o.ClaimToken,
					ClaimedAt:     fmtNullTime(o.ClaimedAt),
					Round:         int64(o.Round),
					HeadVersion:   o.HeadVersion,
					Heads:         int64(o.Heads),
					UpdatedAt:     fmtTime(o.UpdatedAt),
					Content:       string(o.Content),
					ContentHash:   o.ContentHash,
					ObjectID:      o.ID,
				})
			} else {
				c, err = e.d.q.ObjectUpdate(ctx, w, dbsqlc.ObjectUpdateParams{
					CurrentStatus: o.CurrentStatus,
					ClaimedBy:     o.ClaimedBy,
					ClaimToken:    o.ClaimToken,
					ClaimedAt:     fmtNullTime(o.ClaimedAt),
					Round:         int64(o.Round),
					HeadVersion:   o.HeadVersion,
					Heads:         int64(o.Heads),
					UpdatedAt:     fmtTime(o.UpdatedAt),
					ObjectID:      o.ID,
				})
			}
			if err != nil {
				return mapErr(fmt.Sprintf("object update %d", o.ID), err)
			}
			n += c
		}
		return nil
	})
	return int(n), err
}

// ForkList implements driver.KnowledgeExecutor.
func (e *executor) ForkList(ctx context.Context, p driver.ForkListParams) ([]driver.ForkRow, error) {
	rows, err := e.d.q.ForkList(ctx, e.read, dbsqlc.ForkListParams{After: p.After, Limit: int64(p.Limit)})
	if err != nil {
		return nil, mapErr("fork list", err)
	}
	out := make([]driver.ForkRow, len(rows))
	for i, r := range rows {
		heads, err := parseList(r.Heads)
		if err != nil {
			return nil, mapErr(fmt.Sprintf("fork list: heads of object %d", r.ObjectID), err)
		}
		slices.Sort(heads) // json_group_array keeps no order of its own
		out[i] = driver.ForkRow{ObjectID: r.ObjectID, Heads: heads}
	}
	return out, nil
}

// parseList reads a JSON array of integers (a BigIntArray column); empty
// text or null is no element.
func parseList(s string) ([]int64, error) {
	out := []int64{}
	if s == "" || s == "null" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("bad integer list %q: %w", s, err)
	}
	return out, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
