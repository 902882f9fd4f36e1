package client

import (
	"context"

	"github.com/cks-dev/cks"
)

// CheckStored checks one page of stored tasks or objects (what: "tasks" or
// "objects") from cursor against today's bounds; the answer's next cursor
// is 0 after the last page. It needs admin on /.
func (c *Client) CheckStored(ctx context.Context, what string, cursor int64) (cks.StoredCheck, error) {
	return Do(ctx, c, cks.OpCheckStored, cks.CheckStoredInput{What: what, Cursor: cursor})
}
