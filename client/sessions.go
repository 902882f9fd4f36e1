package client

import (
	"context"

	"github.com/cks-dev/cks"
)

// ListSessions returns a page of the studio sessions, newest first, with
// their principals (never a secret or its hash), the total and the next
// page's cursor. It needs admin on /.
func (c *Client) ListSessions(ctx context.Context, in cks.ListSessionsInput) (cks.SessionList, error) {
	return Do(ctx, c, cks.OpListSessions, in)
}

// RevokeSession ends the studio session id: its cookie stops authenticating
// at once. An unknown id is a not-found error. It needs admin on /.
func (c *Client) RevokeSession(ctx context.Context, id string) error {
	_, err := Do(ctx, c, cks.OpRevokeSession, cks.SessionInput{ID: id})
	return err
}
