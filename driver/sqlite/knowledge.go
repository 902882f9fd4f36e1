package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/internal/nullable"
	"github.com/cks-dev/cks/driver/sqlite/internal/dbsqlc"
)

// The knowledge primitives. A bulk primitive runs its single-row statement
// once per row inside one write transaction; SQLite has no round trip to
// save, and the statement is prepared once (stmtCache). Locks are no-ops:
// the one writer serialises every write.

// insertEach inserts rows one statement each in one write transaction and
// returns the ids insert returned, in input order.
func insertEach[T any](ctx context.Context, e *executor, what string, rows []T, insert func(w *wtx, r T) (int64, error)) ([]int64, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(rows))
	err := e.write(ctx, what, func(w *wtx) error {
		for i, r := range rows {
			id, err := insert(w, r)
			if err != nil {
				return err
			}
			ids[i] = id
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// ObjectInsertMany implements driver.KnowledgeExecutor.
func (e *executor) ObjectInsertMany(ctx context.Context, rows []driver.ObjectRow) ([]int64, error) {
	return insertEach(ctx, e, "object insert", rows, func(w *wtx, o driver.ObjectRow) (int64, error) {
		id, err := e.d.q.ObjectInsert(ctx, w, dbsqlc.ObjectInsertParams{
			Kind:           o.Kind,
			Title:          o.Title,
			Content:        string(o.Content),
			ContentHash:    o.ContentHash,
			CurrentStatus:  o.Status,
			ClaimedBy:      o.ClaimedBy,
			ClaimTokenHash: o.ClaimTokenHash,
			ClaimedAt:      fmtNullTime(o.ClaimedAt),
			Round:          int64(o.Round),
			CreatedBy:      o.CreatedBy,
			CreatedAt:      fmtTime(o.CreatedAt),
			UpdatedAt:      fmtTime(o.UpdatedAt),
			HeadVersion:    o.HeadVersion,
			Heads:          int64(o.Heads),
		})
		return id, mapErr("object insert", err)
	})
}

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
	return objectRows(rows)
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

// ObjectExistMany implements driver.KnowledgeExecutor.
func (e *executor) ObjectExistMany(ctx context.Context, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	found, err := e.d.q.ObjectExistMany(ctx, e.read, jsonList(ids))
	return found, mapErr("object exist", err)
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
					CurrentStatus:  o.Status,
					ClaimedBy:      o.ClaimedBy,
					ClaimTokenHash: o.ClaimTokenHash,
					ClaimedAt:      fmtNullTime(o.ClaimedAt),
					Round:          int64(o.Round),
					HeadVersion:    o.HeadVersion,
					Heads:          int64(o.Heads),
					UpdatedAt:      fmtTime(o.UpdatedAt),
					Content:        string(o.Content),
					ContentHash:    o.ContentHash,
					ObjectID:       o.ID,
				})
			} else {
				c, err = e.d.q.ObjectUpdate(ctx, w, dbsqlc.ObjectUpdateParams{
					CurrentStatus:  o.Status,
					ClaimedBy:      o.ClaimedBy,
					ClaimTokenHash: o.ClaimTokenHash,
					ClaimedAt:      fmtNullTime(o.ClaimedAt),
					Round:          int64(o.Round),
					HeadVersion:    o.HeadVersion,
					Heads:          int64(o.Heads),
					UpdatedAt:      fmtTime(o.UpdatedAt),
					ObjectID:       o.ID,
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

// ObjectList implements driver.KnowledgeExecutor. Each shape of filter has
// its own query, so that each uses its index.
func (e *executor) ObjectList(ctx context.Context, p driver.ObjectListParams) ([]driver.ObjectRow, error) {
	var (
		rows []dbsqlc.CksObject
		err  error
	)
	kinds, lim := jsonList(p.Kinds), int64(p.Limit)
	switch {
	case len(p.Statuses) > 0 && p.Unclaimed:
		rows, err = e.d.q.ObjectListUnclaimedByStatus(ctx, e.read, dbsqlc.ObjectListUnclaimedByStatusParams{
			Statuses: jsonList(p.Statuses), After: p.After, Kinds: kinds, Lim: lim})
	case len(p.Statuses) > 0:
		rows, err = e.d.q.ObjectListByStatus(ctx, e.read, dbsqlc.ObjectListByStatusParams{
			Statuses: jsonList(p.Statuses), After: p.After, Kinds: kinds, Lim: lim})
	case len(p.Kinds) > 0:
		rows, err = e.d.q.ObjectListByKind(ctx, e.read, dbsqlc.ObjectListByKindParams{
			Kinds: kinds, After: p.After, Unclaimed: p.Unclaimed, Lim: lim})
	default:
		rows, err = e.d.q.ObjectList(ctx, e.read, dbsqlc.ObjectListParams{After: p.After, Unclaimed: p.Unclaimed, Lim: lim})
	}
	if err != nil {
		return nil, mapErr("object list", err)
	}
	return objectRows(rows)
}

// ObjectClaimable implements driver.KnowledgeExecutor.
func (e *executor) ObjectClaimable(ctx context.Context, p driver.ObjectClaimableParams) ([]driver.ObjectRow, error) {
	rows, err := e.d.q.ObjectClaimable(ctx, e.read, dbsqlc.ObjectClaimableParams{Status: p.Status, Lim: int64(p.Limit)})
	if err != nil {
		return nil, mapErr("object claimable", err)
	}
	return objectRows(rows)
}

// ObjectClaimedBefore implements driver.KnowledgeExecutor.
func (e *executor) ObjectClaimedBefore(ctx context.Context, p driver.ObjectClaimedBeforeParams) ([]driver.ObjectRow, error) {
	before := fmtTime(p.Before)
	rows, err := e.d.q.ObjectClaimedBefore(ctx, e.read, &before)
	if err != nil {
		return nil, mapErr("object claimed before", err)
	}
	return objectRows(rows)
}

// ForkList implements driver.KnowledgeExecutor.
func (e *executor) ForkList(ctx context.Context, p driver.ForkListParams) ([]driver.ForkRow, error) {
	rows, err := e.d.q.ForkList(ctx, e.read, dbsqlc.ForkListParams{After: p.After, Lim: int64(p.Limit)})
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

// VersionInsertMany implements driver.KnowledgeExecutor.
func (e *executor) VersionInsertMany(ctx context.Context, rows []driver.VersionRow) ([]int64, error) {
	return insertEach(ctx, e, "version insert", rows, func(w *wtx, v driver.VersionRow) (int64, error) {
		id, err := e.d.q.VersionInsert(ctx, w, dbsqlc.VersionInsertParams{
			ObjectID:    v.ObjectID,
			Version:     v.Version,
			Parents:     jsonList(v.Parents),
			Content:     string(v.Content),
			ContentHash: v.ContentHash,
			Author:      v.Author,
			CreatedAt:   fmtTime(v.CreatedAt),
			IsHead:      boolInt(v.IsHead),
		})
		return id, mapErr(fmt.Sprintf("version insert %d of object %d", v.Version, v.ObjectID), err)
	})
}

// VersionList implements driver.KnowledgeExecutor.
func (e *executor) VersionList(ctx context.Context, p driver.VersionListParams) ([]driver.VersionRow, error) {
	var (
		rows []dbsqlc.CksObjectVersion
		err  error
	)
	if p.HeadsOnly {
		rows, err = e.d.q.VersionListHeads(ctx, e.read, p.ObjectID)
	} else {
		rows, err = e.d.q.VersionList(ctx, e.read, p.ObjectID)
	}
	if err != nil {
		return nil, mapErr(fmt.Sprintf("version list of object %d", p.ObjectID), err)
	}
	out := make([]driver.VersionRow, len(rows))
	for i, r := range rows {
		if out[i], err = versionRow(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// VersionUnsetHeads implements driver.KnowledgeExecutor.
func (e *executor) VersionUnsetHeads(ctx context.Context, p driver.VersionUnsetHeadsParams) (int, error) {
	if len(p.Versions) == 0 {
		return 0, nil
	}
	var n int64
	err := e.write(ctx, "version unset heads", func(w *wtx) error {
		var err error
		n, err = e.d.q.VersionUnsetHeads(ctx, w, dbsqlc.VersionUnsetHeadsParams{
			ObjectID: p.ObjectID, Versions: jsonList(p.Versions)})
		return mapErr(fmt.Sprintf("version unset heads of object %d", p.ObjectID), err)
	})
	return int(n), err
}

// EdgeInsertMany implements driver.KnowledgeExecutor.
func (e *executor) EdgeInsertMany(ctx context.Context, rows []driver.EdgeRow) ([]int64, error) {
	return insertEach(ctx, e, "edge insert", rows, func(w *wtx, ed driver.EdgeRow) (int64, error) {
		id, err := e.d.q.EdgeInsert(ctx, w, dbsqlc.EdgeInsertParams{
			Src:          ed.Src,
			Dst:          ed.Dst,
			BaseType:     ed.BaseType,
			SemanticType: ed.SemanticType,
			Weight:       ed.Weight,
			CreatedAt:    fmtTime(ed.CreatedAt),
		})
		return id, mapErr(fmt.Sprintf("edge insert %d → %d", ed.Src, ed.Dst), err)
	})
}

// EdgeListOf implements driver.KnowledgeExecutor.
func (e *executor) EdgeListOf(ctx context.Context, objectID int64) ([]driver.EdgeRow, error) {
	rows, err := e.d.q.EdgeListOf(ctx, e.read, objectID)
	if err != nil {
		return nil, mapErr(fmt.Sprintf("edges of object %d", objectID), err)
	}
	return edgeRows(rows)
}

// EdgeList implements driver.KnowledgeExecutor.
func (e *executor) EdgeList(ctx context.Context, p driver.EdgeListParams) ([]driver.EdgeRow, error) {
	rows, err := e.d.q.EdgeList(ctx, e.read, dbsqlc.EdgeListParams{After: p.After, Lim: int64(p.Limit)})
	if err != nil {
		return nil, mapErr("edge list", err)
	}
	return edgeRows(rows)
}

// TransitionInsertMany implements driver.KnowledgeExecutor.
func (e *executor) TransitionInsertMany(ctx context.Context, rows []driver.TransitionRow) error {
	if len(rows) == 0 {
		return nil
	}
	return e.write(ctx, "transition insert", func(w *wtx) error {
		for _, r := range rows {
			err := e.d.q.TransitionInsert(ctx, w, dbsqlc.TransitionInsertParams{
				ObjectID:        r.ObjectID,
				Ts:              fmtTime(r.TS),
				Agent:           r.Agent,
				Action:          r.Action,
				TransitionedTo:  r.TransitionedTo,
				ReasoningNodeID: nullable.Int(r.ReasoningNodeID),
				ContentHash:     r.ContentHash,
				Round:           int64(r.Round),
			})
			if err != nil {
				return mapErr(fmt.Sprintf("transition insert of object %d", r.ObjectID), err)
			}
		}
		return nil
	})
}

// TransitionList implements driver.KnowledgeExecutor.
func (e *executor) TransitionList(ctx context.Context, objectID int64) ([]driver.TransitionRow, error) {
	rows, err := e.d.q.TransitionList(ctx, e.read, objectID)
	if err != nil {
		return nil, mapErr(fmt.Sprintf("transition log of object %d", objectID), err)
	}
	out := make([]driver.TransitionRow, len(rows))
	for i, r := range rows {
		ts, err := parseTime(r.Ts)
		if err != nil {
			return nil, err
		}
		out[i] = driver.TransitionRow{
			Seq:             r.Seq,
			ObjectID:        r.ObjectID,
			TS:              ts,
			Agent:           r.Agent,
			Action:          r.Action,
			TransitionedTo:  r.TransitionedTo,
			ReasoningNodeID: nullable.Deref(r.ReasoningNodeID),
			ContentHash:     r.ContentHash,
			Round:           int(r.Round),
		}
	}
	return out, nil
}

func objectRows(rows []dbsqlc.CksObject) ([]driver.ObjectRow, error) {
	out := make([]driver.ObjectRow, len(rows))
	for i, r := range rows {
		claimed, err := parseNullTime(r.ClaimedAt)
		if err != nil {
			return nil, err
		}
		created, err := parseTime(r.CreatedAt)
		if err != nil {
			return nil, err
		}
		updated, err := parseTime(r.UpdatedAt)
		if err != nil {
			return nil, err
		}
		out[i] = driver.ObjectRow{
			ID:             r.ObjectID,
			Kind:           r.Kind,
			Title:          r.Title,
			Content:        []byte(r.Content),
			ContentHash:    r.ContentHash,
			Status:         r.CurrentStatus,
			ClaimedBy:      r.ClaimedBy,
			ClaimTokenHash: r.ClaimToken,
			ClaimedAt:      claimed,
			Round:          int(r.Round),
			HeadVersion:    r.HeadVersion,
			Heads:          int(r.Heads),
			CreatedBy:      r.CreatedBy,
			CreatedAt:      created,
			UpdatedAt:      updated,
		}
	}
	return out, nil
}

func versionRow(r dbsqlc.CksObjectVersion) (driver.VersionRow, error) {
	parents, err := parseList(r.Parents)
	if err != nil {
		return driver.VersionRow{}, mapErr(fmt.Sprintf("parents of version %d of object %d", r.Version, r.ObjectID), err)
	}
	created, err := parseTime(r.CreatedAt)
	if err != nil {
		return driver.VersionRow{}, err
	}
	return driver.VersionRow{
		ID:          r.VersionID,
		ObjectID:    r.ObjectID,
		Version:     r.Version,
		Parents:     parents,
		Content:     []byte(r.Content),
		ContentHash: r.ContentHash,
		Author:      r.Author,
		CreatedAt:   created,
		IsHead:      r.IsHead != 0,
	}, nil
}

func edgeRows(rows []dbsqlc.CksEdge) ([]driver.EdgeRow, error) {
	out := make([]driver.EdgeRow, len(rows))
	for i, r := range rows {
		created, err := parseTime(r.CreatedAt)
		if err != nil {
			return nil, err
		}
		out[i] = driver.EdgeRow{ID: r.EdgeID, Src: r.Src, Dst: r.Dst, BaseType: r.BaseType,
			SemanticType: r.SemanticType, Weight: r.Weight, CreatedAt: created}
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
