package postgres

import (
	"context"
	"fmt"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/postgres/internal/dbsqlc"
)

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

// PrincipalAuth implements driver.PrincipalExecutor in one statement: the
// grants come back as two parallel arrays.
func (e *executor) PrincipalAuth(ctx context.Context, tokenHash string) (driver.PrincipalAuthRow, error) {
	x, err := e.d.q.PrincipalAuth(ctx, e.db, tokenHash)
	if err != nil {
		return driver.PrincipalAuthRow{}, mapErr("principal auth", err)
	}
	if len(x.GrantResources) != len(x.GrantPermissions) {
		return driver.PrincipalAuthRow{}, fmt.Errorf("postgres: principal auth: %d grant resources for %d permissions",
			len(x.GrantResources), len(x.GrantPermissions))
	}
	out := driver.PrincipalAuthRow{PrincipalRow: principalRowOf(x.CksPrincipal), Grants: make([]driver.GrantRow, len(x.GrantResources))}
	for i, res := range x.GrantResources {
		out.Grants[i] = driver.GrantRow{PrincipalID: out.ID, Resource: res, Permission: x.GrantPermissions[i]}
	}
	return out, nil
}
