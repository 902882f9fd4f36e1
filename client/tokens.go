package client

import (
	"context"

	"github.com/cks-dev/cks/ops"
	"github.com/cks-dev/cks/store"
)

// CreateToken creates a principal with the grants of req and returns it with
// its token, which the hub shows only this once. It needs admin on /.
func (c *Client) CreateToken(ctx context.Context, req ops.TokenRequest) (ops.CreatedToken, error) {
	return Do(ctx, c, ops.CreateToken, req)
}

// ListTokens returns every principal with its grants (never tokens or hashes).
// It needs admin on /.
func (c *Client) ListTokens(ctx context.Context) ([]store.PrincipalGrants, error) {
	out, err := Do(ctx, c, ops.ListTokens, struct{}{})
	return out.Tokens, err
}

// RevokeToken deletes the principal id, so its token stops working at once.
// The last principal holding admin on / cannot be revoked (a conflict error).
// It needs admin on /.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	_, err := Do(ctx, c, ops.RevokeToken, ops.TokenInput{ID: id})
	return err
}
