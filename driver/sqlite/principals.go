package sqlite

import (
	"context"
	"encoding/json"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/internal/nullable"
	"github.com/cks-dev/cks/driver/sqlite/internal/dbsqlc"
)

// PrincipalInsert implements driver.PrincipalExecutor.
func (e *executor) PrincipalInsert(ctx context.Context, p driver.PrincipalRow) error {
	return e.write(ctx, "principal insert", func(w *wtx) error {
		return mapErr("principal insert "+p.ID, e.d.q.PrincipalInsert(ctx, w, dbsqlc.PrincipalInsertParams{
			PrincipalID:    p.ID,
			Name:           p.Name,
			TokenHash:      p.TokenHash,
			CreatedAt:      fmtTime(p.CreatedAt),
			LeaseTaskID:    nullable.Int(p.LeaseTaskID),
			LeaseTokenHash: nullable.String(p.LeaseTokenHash),
		}))
	})
}

// grantJSON is one element of GrantInsertMany's JSON array.
type grantJSON struct {
	PrincipalID string `json:"principal_id"`
	Resource    string `json:"resource"`
	Permission  string `json:"permission"`
}

// GrantInsertMany implements driver.PrincipalExecutor.
func (e *executor) GrantInsertMany(ctx context.Context, grants []driver.GrantRow) error {
	if len(grants) == 0 {
		return nil
	}
	list := make([]grantJSON, len(grants))
	for i, g := range grants {
		list[i] = grantJSON{g.PrincipalID, g.Resource, g.Permission}
	}
	b, err := json.Marshal(list)
	if err != nil {
		return mapErr("grant insert", err)
	}
	return e.write(ctx, "grant insert", func(w *wtx) error {
		return mapErr("grant insert", e.d.q.GrantInsertMany(ctx, w, string(b)))
	})
}

// PrincipalByTokenHash implements driver.PrincipalExecutor.
func (e *executor) PrincipalByTokenHash(ctx context.Context, tokenHash string) (driver.PrincipalRow, error) {
	p, err := e.d.q.PrincipalByTokenHash(ctx, e.read, tokenHash)
	if err != nil {
		return driver.PrincipalRow{}, mapErr("principal by token hash", err)
	}
	return principalRow(p)
}

// GrantList implements driver.PrincipalExecutor.
func (e *executor) GrantList(ctx context.Context, principalID string) ([]driver.GrantRow, error) {
	rows, err := e.d.q.GrantList(ctx, e.read, principalID)
	if err != nil {
		return nil, mapErr("grant list "+principalID, err)
	}
	return grantRows(rows), nil
}

// PrincipalList implements driver.PrincipalExecutor.
func (e *executor) PrincipalList(ctx context.Context) ([]driver.PrincipalRow, error) {
	rows, err := e.d.q.PrincipalList(ctx, e.read)
	if err != nil {
		return nil, mapErr("principal list", err)
	}
	out := make([]driver.PrincipalRow, 0, len(rows))
	for _, r := range rows {
		p, err := principalRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// GrantListAll implements driver.PrincipalExecutor.
func (e *executor) GrantListAll(ctx context.Context) ([]driver.GrantRow, error) {
	rows, err := e.d.q.GrantListAll(ctx, e.read)
	if err != nil {
		return nil, mapErr("grant list all", err)
	}
	return grantRows(rows), nil
}

// PrincipalDelete implements driver.PrincipalExecutor.
func (e *executor) PrincipalDelete(ctx context.Context, id string) (bool, error) {
	var n int64
	err := e.write(ctx, "principal delete", func(w *wtx) error {
		var err error
		n, err = e.d.q.PrincipalDelete(ctx, w, id)
		return mapErr("principal delete "+id, err)
	})
	return n > 0, err
}

// PrincipalCountWithGrant implements driver.PrincipalExecutor. Inside a
// write transaction the count stays true until commit: there is one writer.
func (e *executor) PrincipalCountWithGrant(ctx context.Context, resource, permission, excludeID string) (int, error) {
	n, err := e.d.q.PrincipalCountWithGrant(ctx, e.read, dbsqlc.PrincipalCountWithGrantParams{
		Resource: resource, Permission: permission, ExcludeID: excludeID})
	return int(n), mapErr("principal count with grant", err)
}

// PrincipalDeleteEndedLeases implements driver.PrincipalExecutor.
func (e *executor) PrincipalDeleteEndedLeases(ctx context.Context) (int, error) {
	var n int64
	err := e.write(ctx, "principal delete ended leases", func(w *wtx) error {
		var err error
		n, err = e.d.q.PrincipalDeleteEndedLeases(ctx, w)
		return mapErr("principal delete ended leases", err)
	})
	return int(n), err
}

func principalRow(p dbsqlc.CksPrincipal) (driver.PrincipalRow, error) {
	created, err := parseTime(p.CreatedAt)
	if err != nil {
		return driver.PrincipalRow{}, err
	}
	return driver.PrincipalRow{
		ID:             p.PrincipalID,
		Name:           p.Name,
		TokenHash:      p.TokenHash,
		CreatedAt:      created,
		LeaseTaskID:    nullable.Deref(p.TaskID),
		LeaseTokenHash: nullable.Deref(p.LeaseTokenHash),
	}, nil
}

func grantRows(rows []dbsqlc.CksGrant) []driver.GrantRow {
	out := make([]driver.GrantRow, len(rows))
	for i, g := range rows {
		out[i] = driver.GrantRow{PrincipalID: g.PrincipalID, Resource: g.Resource, Permission: g.Permission}
	}
	return out
}
