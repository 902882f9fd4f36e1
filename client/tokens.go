package client

import (
	"context"

	"github.com/cks-dev/cks"
)

// CreateToken creates a principal with the grants of req and returns it with
// its token, which the hub shows only this once. It needs admin on /.
func (c *Client) CreateToken(ctx context.Context, req cks.CreateTokenInput) (cks.CreatedToken, error) {
	return Do(ctx, c, cks.OpCreateToken, req)
}

// ListTokens returns every principal with its grants (never tokens or hashes).
// It needs admin on /.
func (c *Client) ListTokens(ctx context.Context) ([]cks.PrincipalGrants, error) {
	out, err := Do(ctx, c, cks.OpListTokens, struct{}{})
	return out.Tokens, err
}

// RevokeToken deletes the principal id, so its token stops working at once.
// The last principal holding admin on / cannot be revoked (a conflict error).
// It needs admin on /.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	_, err := Do(ctx, c, cks.OpRevokeToken, cks.TokenInput{ID: id})
	return err
}
