package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/cks-dev/cks/api"
	"github.com/cks-dev/cks/store"
)

// CreateToken creates a principal with the grants of req and returns it with
// its token, which the hub shows only this once. It needs admin on /.
func (c *Client) CreateToken(ctx context.Context, req api.TokenRequest) (api.CreatedToken, error) {
	var out api.CreatedToken
	err := c.do(ctx, http.MethodPost, "/v1/tokens", req, &out)
	return out, err
}

// ListTokens returns every principal with its grants (never tokens or hashes).
// It needs admin on /.
func (c *Client) ListTokens(ctx context.Context) ([]store.PrincipalGrants, error) {
	var out api.TokenList
	err := c.do(ctx, http.MethodGet, "/v1/tokens", nil, &out)
	return out.Tokens, err
}

// RevokeToken deletes the principal id, so its token stops working at once.
// The last principal holding admin on / cannot be revoked (a conflict error).
// It needs admin on /.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/tokens/"+url.PathEscape(id), nil, nil)
}

// ClaimWithTokens is Claim returning the whole answer: the leased tasks and,
// per task id, the task-scoped agent credential to work it with.
func (c *Client) ClaimWithTokens(ctx context.Context, worker string, types []string, n int, lease time.Duration) (api.ClaimedTasks, error) {
	var out api.ClaimedTasks
	err := c.do(ctx, http.MethodPost, "/v1/tasks/claim",
		api.ClaimRequest{Worker: worker, Types: types, N: n, LeaseS: lease.Seconds()}, &out)
	return out, err
}
