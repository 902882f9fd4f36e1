package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/internal/nullable"
	"github.com/cks-dev/cks/driver/postgres/internal/dbsqlc"
	"github.com/cks-dev/cks/store"
	"github.com/jackc/pgx/v5"
)

// The knowledge primitives. A bulk primitive sends its single-row
// statement once per row in one pgx batch: one round trip, in the
// surrounding transaction (outside one, the batch is its own).

// ObjectInsertMany implements driver.KnowledgeExecutor.
func (e *executor) ObjectInsertMany(ctx context.Context, rows []driver.ObjectRow) ([]int64, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	args := make([]dbsqlc.ObjectInsertParams, len(rows))
	for i, o := range rows {
		args[i] = dbsqlc.ObjectInsertParams{
			Kind:           o.Kind,
			Title:          o.Title,
			Content:        string(o.Content),
			ContentHash:    o.ContentHash,
			CurrentStatus:  o.Status,
			ClaimedBy:      o.ClaimedBy,
			ClaimTokenHash: o.ClaimTokenHash,
			ClaimedAt:      nullTime(o.ClaimedAt),
			Round:          int32(o.Round),
			CreatedBy:      o.CreatedBy,
			CreatedAt:      store.Time(o.CreatedAt),
			UpdatedAt:      store.Time(o.UpdatedAt),
			HeadVersion:    o.HeadVersion,
			Heads:          int32(o.Heads),
		}
	}
	return batchIDs(len(args), "object insert", e.d.q.ObjectInsert(ctx, e.db, args).QueryRow)
}

// ObjectGetMany implements driver.KnowledgeExecutor. LockUpdate is FOR NO
// KEY UPDATE (see driver.KnowledgeExecutor).
func (e *executor) ObjectGetMany(ctx context.Context, p driver.ObjectGetManyParams) ([]driver.ObjectRow, error) {
	if len(p.IDs) == 0 {
		return nil, nil
	}
	var (
		rows []dbsqlc.CksObject
		err  error
	)
	switch p.Lock {
	case driver.LockNone:
		rows, err = e.d.q.ObjectGetMany(ctx, e.db, p.IDs)
	case driver.LockUpdate:
		rows, err = e.d.q.ObjectGetManyForUpdate(ctx, e.db, p.IDs)
	default:
		return nil, fmt.Errorf("postgres: object get with lock %d: only LockNone and LockUpdate are taken", p.Lock)
	}
	if err != nil {
		return nil, mapErr("object get", err)
	}
	return objectRows(rows), nil
}

// ObjectExistMany implements driver.KnowledgeExecutor.
func (e *executor) ObjectExistMany(ctx context.Context, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	found, err := e.d.q.ObjectExistMany(ctx, e.db, ids)
	return found, mapErr("object exist", err)
}

// ObjectUpdateMany implements driver.KnowledgeExecutor: one batch for the
// rows with content and one for those without.
func (e *executor) ObjectUpdateMany(ctx context.Context, rows []driver.ObjectRow) (int, error) {
	var (
		plain   []dbsqlc.ObjectUpdateParams
		content []dbsqlc.ObjectUpdateWithContentParams
	)
	for _, o := range rows {
		if o.Content != nil {
			content = append(content, dbsqlc.ObjectUpdateWithContentParams{
				CurrentStatus:  o.Status,
				ClaimedBy:      o.ClaimedBy,
				ClaimTokenHash: o.ClaimTokenHash,
				ClaimedAt:      nullTime(o.ClaimedAt),
				Round:          int32(o.Round),
				HeadVersion:    o.HeadVersion,
				Heads:          int32(o.Heads),
				UpdatedAt:      store.Time(o.UpdatedAt),
				Content:        string(o.Content),
				ContentHash:    o.ContentHash,
				ObjectID:       o.ID,
			})
			continue
		}
		plain = append(plain, dbsqlc.ObjectUpdateParams{
			CurrentStatus:  o.Status,
			ClaimedBy:      o.ClaimedBy,
			ClaimTokenHash: o.ClaimTokenHash,
			ClaimedAt:      nullTime(o.ClaimedAt),
			Round:          int32(o.Round),
			HeadVersion:    o.HeadVersion,
			Heads:          int32(o.Heads),
			UpdatedAt:      store.Time(o.UpdatedAt),
			ObjectID:       o.ID,
		})
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

// ObjectList implements driver.KnowledgeExecutor. Each shape of filter has
// its own query, so that each uses its index.
func (e *executor) ObjectList(ctx context.Context, p driver.ObjectListParams) ([]driver.ObjectRow, error) {
	var (
		rows []dbsqlc.CksObject
		err  error
	)
	kinds, lim := orEmpty(p.Kinds), int32(p.Limit)
	switch {
	case len(p.Statuses) > 0 && p.Unclaimed:
		rows, err = e.d.q.ObjectListUnclaimedByStatus(ctx, e.db, dbsqlc.ObjectListUnclaimedByStatusParams{
			Statuses: p.Statuses, After: p.After, Kinds: kinds, Lim: lim})
	case len(p.Statuses) > 0:
		rows, err = e.d.q.ObjectListByStatus(ctx, e.db, dbsqlc.ObjectListByStatusParams{
			Statuses: p.Statuses, After: p.After, Kinds: kinds, Lim: lim})
	case len(p.Kinds) > 0:
		rows, err = e.d.q.ObjectListByKind(ctx, e.db, dbsqlc.ObjectListByKindParams{
			Kinds: kinds, After: p.After, Unclaimed: p.Unclaimed, Lim: lim})
	default:
		rows, err = e.d.q.ObjectList(ctx, e.db, dbsqlc.ObjectListParams{After: p.After, Unclaimed: p.Unclaimed, Lim: lim})
	}
	if err != nil {
		return nil, mapErr("object list", err)
	}
	return objectRows(rows), nil
}

// ObjectClaimable implements driver.KnowledgeExecutor (FOR NO KEY UPDATE
// SKIP LOCKED).
func (e *executor) ObjectClaimable(ctx context.Context, p driver.ObjectClaimableParams) ([]driver.ObjectRow, error) {
	rows, err := e.d.q.ObjectClaimable(ctx, e.db, dbsqlc.ObjectClaimableParams{Status: p.Status, Lim: int32(p.Limit)})
	if err != nil {
		return nil, mapErr("object claimable", err)
	}
	return objectRows(rows), nil
}

// ObjectClaimedBefore implements driver.KnowledgeExecutor (FOR NO KEY
// UPDATE SKIP LOCKED).
func (e *executor) ObjectClaimedBefore(ctx context.Context, p driver.ObjectClaimedBeforeParams) ([]driver.ObjectRow, error) {
	before := store.Time(p.Before)
	rows, err := e.d.q.ObjectClaimedBefore(ctx, e.db, &before)
	if err != nil {
		return nil, mapErr("object claimed before", err)
	}
	return objectRows(rows), nil
}

// ForkList implements driver.KnowledgeExecutor.
func (e *executor) ForkList(ctx context.Context, p driver.ForkListParams) ([]driver.ForkRow, error) {
	rows, err := e.d.q.ForkList(ctx, e.db, dbsqlc.ForkListParams{After: p.After, Lim: int32(p.Limit)})
	if err != nil {
		return nil, mapErr("fork list", err)
	}
	out := make([]driver.ForkRow, len(rows))
	for i, r := range rows {
		out[i] = driver.ForkRow{ObjectID: r.ObjectID, Heads: orEmpty(r.Heads)}
	}
	return out, nil
}

// VersionInsertMany implements driver.KnowledgeExecutor.
func (e *executor) VersionInsertMany(ctx context.Context, rows []driver.VersionRow) ([]int64, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	args := make([]dbsqlc.VersionInsertParams, len(rows))
	for i, v := range rows {
		args[i] = dbsqlc.VersionInsertParams{
			ObjectID:    v.ObjectID,
			Version:     v.Version,
			Parents:     orEmpty(v.Parents),
			Content:     string(v.Content),
			ContentHash: v.ContentHash,
			Author:      v.Author,
			CreatedAt:   store.Time(v.CreatedAt),
			IsHead:      v.IsHead,
		}
	}
	return batchIDs(len(args), "version insert", e.d.q.VersionInsert(ctx, e.db, args).QueryRow)
}

// VersionList implements driver.KnowledgeExecutor.
func (e *executor) VersionList(ctx context.Context, p driver.VersionListParams) ([]driver.VersionRow, error) {
	var (
		rows []dbsqlc.CksObjectVersion
		err  error
	)
	if p.HeadsOnly {
		rows, err = e.d.q.VersionListHeads(ctx, e.db, p.ObjectID)
	} else {
		rows, err = e.d.q.VersionList(ctx, e.db, p.ObjectID)
	}
	if err != nil {
		return nil, mapErr(fmt.Sprintf("version list of object %d", p.ObjectID), err)
	}
	out := make([]driver.VersionRow, len(rows))
	for i, r := range rows {
		out[i] = driver.VersionRow{
			ID:          r.VersionID,
			ObjectID:    r.ObjectID,
			Version:     r.Version,
			Parents:     orEmpty(r.Parents),
			Content:     []byte(r.Content),
			ContentHash: r.ContentHash,
			Author:      r.Author,
			CreatedAt:   store.Time(r.CreatedAt),
			IsHead:      r.IsHead,
		}
	}
	return out, nil
}

// VersionUnsetHeads implements driver.KnowledgeExecutor.
func (e *executor) VersionUnsetHeads(ctx context.Context, p driver.VersionUnsetHeadsParams) (int, error) {
	if len(p.Versions) == 0 {
		return 0, nil
	}
	n, err := e.d.q.VersionUnsetHeads(ctx, e.db, dbsqlc.VersionUnsetHeadsParams{ObjectID: p.ObjectID, Versions: p.Versions})
	return int(n), mapErr(fmt.Sprintf("version unset heads of object %d", p.ObjectID), err)
}

// EdgeInsertMany implements driver.KnowledgeExecutor.
func (e *executor) EdgeInsertMany(ctx context.Context, rows []driver.EdgeRow) ([]int64, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	args := make([]dbsqlc.EdgeInsertParams, len(rows))
	for i, ed := range rows {
		args[i] = dbsqlc.EdgeInsertParams{Src: ed.Src, Dst: ed.Dst, BaseType: ed.BaseType,
			SemanticType: ed.SemanticType, Weight: ed.Weight, CreatedAt: store.Time(ed.CreatedAt)}
	}
	return batchIDs(len(args), "edge insert", e.d.q.EdgeInsert(ctx, e.db, args).QueryRow)
}

// EdgeListOf implements driver.KnowledgeExecutor.
func (e *executor) EdgeListOf(ctx context.Context, objectID int64) ([]driver.EdgeRow, error) {
	rows, err := e.d.q.EdgeListOf(ctx, e.db, objectID)
	if err != nil {
		return nil, mapErr(fmt.Sprintf("edges of object %d", objectID), err)
	}
	return edgeRows(rows), nil
}

// EdgeList implements driver.KnowledgeExecutor.
func (e *executor) EdgeList(ctx context.Context, p driver.EdgeListParams) ([]driver.EdgeRow, error) {
	rows, err := e.d.q.EdgeList(ctx, e.db, dbsqlc.EdgeListParams{After: p.After, Lim: int32(p.Limit)})
	if err != nil {
		return nil, mapErr("edge list", err)
	}
	return edgeRows(rows), nil
}

// TransitionInsertMany implements driver.KnowledgeExecutor.
func (e *executor) TransitionInsertMany(ctx context.Context, rows []driver.TransitionRow) error {
	if len(rows) == 0 {
		return nil
	}
	args := make([]dbsqlc.TransitionInsertParams, len(rows))
	for i, r := range rows {
		args[i] = dbsqlc.TransitionInsertParams{
			ObjectID:        r.ObjectID,
			Ts:              store.Time(r.TS),
			Agent:           r.Agent,
			Action:          r.Action,
			TransitionedTo:  r.TransitionedTo,
			ReasoningNodeID: nullable.Int(r.ReasoningNodeID),
			ContentHash:     r.ContentHash,
			Round:           int32(r.Round),
		}
	}
	var errs []error
	e.d.q.TransitionInsert(ctx, e.db, args).Exec(func(_ int, err error) { errs = append(errs, err) })
	return mapErr("transition insert", firstErr(errs))
}

// TransitionList implements driver.KnowledgeExecutor.
func (e *executor) TransitionList(ctx context.Context, objectID int64) ([]driver.TransitionRow, error) {
	rows, err := e.d.q.TransitionList(ctx, e.db, objectID)
	if err != nil {
		return nil, mapErr(fmt.Sprintf("transition log of object %d", objectID), err)
	}
	out := make([]driver.TransitionRow, len(rows))
	for i, r := range rows {
		out[i] = driver.TransitionRow{
			Seq:             r.Seq,
			ObjectID:        r.ObjectID,
			TS:              store.Time(r.Ts),
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

func objectRows(rows []dbsqlc.CksObject) []driver.ObjectRow {
	out := make([]driver.ObjectRow, len(rows))
	for i, r := range rows {
		out[i] = driver.ObjectRow{
			ID:             r.ObjectID,
			Kind:           r.Kind,
			Title:          r.Title,
			Content:        []byte(r.Content),
			ContentHash:    r.ContentHash,
			Status:         r.CurrentStatus,
			ClaimedBy:      r.ClaimedBy,
			ClaimTokenHash: r.ClaimToken,
			ClaimedAt:      fromNullTime(r.ClaimedAt),
			Round:          int(r.Round),
			HeadVersion:    r.HeadVersion,
			Heads:          int(r.Heads),
			CreatedBy:      r.CreatedBy,
			CreatedAt:      store.Time(r.CreatedAt),
			UpdatedAt:      store.Time(r.UpdatedAt),
		}
	}
	return out
}

func edgeRows(rows []dbsqlc.CksEdge) []driver.EdgeRow {
	out := make([]driver.EdgeRow, len(rows))
	for i, r := range rows {
		out[i] = driver.EdgeRow{ID: r.EdgeID, Src: r.Src, Dst: r.Dst, BaseType: r.BaseType,
			SemanticType: r.SemanticType, Weight: r.Weight, CreatedAt: store.Time(r.CreatedAt)}
	}
	return out
}

// orEmpty maps a nil list to an empty one: a NULL array parameter would
// make "= ANY" and cardinality NULL, and NOT NULL array columns refuse it.
func orEmpty[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
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
