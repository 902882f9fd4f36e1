package postgres

import (
	"context"

	"github.com/cks-dev/cks/driver/postgres/internal/dbsqlc"
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
