package postgres

import (
	"context"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/internal/nullable"
	"github.com/cks-dev/cks/driver/postgres/internal/dbsqlc"
	"github.com/cks-dev/cks/store"
)

// PrincipalInsert implements driver.PrincipalExecutor.
func (e *executor) PrincipalInsert(ctx context.Context, p driver.PrincipalRow) error {
	return mapErr("principal insert "+p.ID, e.d.q.PrincipalInsert(ctx, e.db, dbsqlc.PrincipalInsertParams{
		PrincipalID:    p.ID,
		Name:           p.Name,
		TokenHash:      p.TokenHash,
		CreatedAt:      store.Time(p.CreatedAt),
		LeaseTaskID:    nullable.Int(p.LeaseTaskID),
		LeaseTokenHash: nullable.String(p.LeaseTokenHash),
	}))
}

// GrantInsertMany implements driver.PrincipalExecutor.
func (e *executor) GrantInsertMany(ctx context.Context, grants []driver.GrantRow) error {
	if len(grants) == 0 {
		return nil
	}
	var arg dbsqlc.GrantInsertManyParams
	for _, g := range grants {
		arg.PrincipalIDs = append(arg.PrincipalIDs, g.PrincipalID)
		arg.Resources = append(arg.Resources, g.Resource)
		arg.Permissions = append(arg.Permissions, g.Permission)
	}
	return mapErr("grant insert", e.d.q.GrantInsertMany(ctx, e.db, arg))
}

// PrincipalByTokenHash implements driver.PrincipalExecutor.
func (e *executor) PrincipalByTokenHash(ctx context.Context, tokenHash string) (driver.PrincipalRow, error) {
	p, err := e.d.q.PrincipalByTokenHash(ctx, e.db, tokenHash)
	if err != nil {
		return driver.PrincipalRow{}, mapErr("principal by token hash", err)
	}
	return principalRow(p), nil
}

// GrantList implements driver.PrincipalExecutor.
func (e *executor) GrantList(ctx context.Context, principalID string) ([]driver.GrantRow, error) {
	rows, err := e.d.q.GrantList(ctx, e.db, principalID)
	if err != nil {
		return nil, mapErr("grant list "+principalID, err)
	}
	return grantRows(rows), nil
}

// PrincipalList implements driver.PrincipalExecutor.
func (e *executor) PrincipalList(ctx context.Context) ([]driver.PrincipalRow, error) {
	rows, err := e.d.q.PrincipalList(ctx, e.db)
	if err != nil {
		return nil, mapErr("principal list", err)
	}
	out := make([]driver.PrincipalRow, len(rows))
	for i, r := range rows {
		out[i] = principalRow(r)
	}
	return out, nil
}

// GrantListAll implements driver.PrincipalExecutor.
func (e *executor) GrantListAll(ctx context.Context) ([]driver.GrantRow, error) {
	rows, err := e.d.q.GrantListAll(ctx, e.db)
	if err != nil {
		return nil, mapErr("grant list all", err)
	}
	return grantRows(rows), nil
}

// PrincipalDelete implements driver.PrincipalExecutor.
func (e *executor) PrincipalDelete(ctx context.Context, id string) (bool, error) {
	n, err := e.d.q.PrincipalDelete(ctx, e.db, id)
	return n > 0, mapErr("principal delete "+id, err)
}

// PrincipalCountWithGrant implements driver.PrincipalExecutor. It locks
// the grants it counts (of every holder, excludeID's too) until the
// transaction ends.
func (e *executor) PrincipalCountWithGrant(ctx context.Context, resource, permission, excludeID string) (int, error) {
	holders, err := e.d.q.GrantHoldersLock(ctx, e.db, dbsqlc.GrantHoldersLockParams{Resource: resource, Permission: permission})
	if err != nil {
		return 0, mapErr("principal count with grant", err)
	}
	n := 0
	for _, id := range holders {
		if id != excludeID {
			n++
		}
	}
	return n, nil
}

// PrincipalDeleteEndedLeases implements driver.PrincipalExecutor.
func (e *executor) PrincipalDeleteEndedLeases(ctx context.Context) (int, error) {
	n, err := e.d.q.PrincipalDeleteEndedLeases(ctx, e.db)
	return int(n), mapErr("principal delete ended leases", err)
}

func principalRow(p dbsqlc.CksPrincipal) driver.PrincipalRow {
	return driver.PrincipalRow{
		ID:             p.PrincipalID,
		Name:           p.Name,
		TokenHash:      p.TokenHash,
		CreatedAt:      store.Time(p.CreatedAt),
		LeaseTaskID:    nullable.Deref(p.TaskID),
		LeaseTokenHash: nullable.Deref(p.LeaseTokenHash),
	}
}

func grantRows(rows []dbsqlc.CksGrant) []driver.GrantRow {
	out := make([]driver.GrantRow, len(rows))
	for i, g := range rows {
		out[i] = driver.GrantRow{PrincipalID: g.PrincipalID, Resource: g.Resource, Permission: g.Permission}
	}
	return out
}
