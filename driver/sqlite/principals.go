package sqlite

import (
	"context"
	"encoding/json"

	"github.com/cks-dev/cks/driver"
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
