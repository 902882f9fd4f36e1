package sqlite

import (
	"context"
	"encoding/json"

	"github.com/cks-dev/cks/internal/driver"
)

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

// PrincipalAuth implements driver.PrincipalExecutor: two statements, which
// cost no round trip in process; in a transaction, one snapshot, else two
// reads (grants revoked between them are gone from the second: a request
// sees the revocation, never a grant that was not there).
func (e *executor) PrincipalAuth(ctx context.Context, tokenHash string) (driver.PrincipalAuthRow, error) {
	p, err := e.PrincipalByTokenHash(ctx, tokenHash)
	if err != nil {
		return driver.PrincipalAuthRow{}, err
	}
	grants, err := e.GrantList(ctx, p.ID)
	if err != nil {
		return driver.PrincipalAuthRow{}, err
	}
	return driver.PrincipalAuthRow{PrincipalRow: p, Grants: grants}, nil
}
