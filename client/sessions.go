package client

import (
	"context"

	"github.com/cks-dev/cks"
)

// ListSessions returns every studio session with its principal (never a
// secret or its hash). It needs admin on /.
func (c *Client) ListSessions(ctx context.Context) ([]cks.Session, error) {
	out, err := Do(ctx, c, cks.OpListSessions, struct{}{})
	return out.Sessions, err
}

// RevokeSession ends the studio session id: its cookie stops authenticating
// at once. An unknown id is a not-found error. It needs admin on /.
func (c *Client) RevokeSession(ctx context.Context, id string) error {
	_, err := Do(ctx, c, cks.OpRevokeSession, cks.SessionInput{ID: id})
	return err
}
