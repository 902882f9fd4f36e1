package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/cks-dev/cks/api"
	"github.com/cks-dev/cks/sweeper"
)

// ListSweepers returns the status of every sweeper of the hub.
func (c *Client) ListSweepers(ctx context.Context) ([]sweeper.Status, error) {
	var out api.SweeperList
	err := c.do(ctx, http.MethodGet, "/v1/sweepers", nil, &out)
	return out.Sweepers, err
}

// SweeperStatus returns one sweeper's status.
func (c *Client) SweeperStatus(ctx context.Context, id string) (sweeper.Status, error) {
	var st sweeper.Status
	err := c.do(ctx, http.MethodGet, "/v1/sweepers/"+url.PathEscape(id), nil, &st)
	return st, err
}

// StartSweeper records desired_running=true and starts the sweeper on the hub.
func (c *Client) StartSweeper(ctx context.Context, id string) (sweeper.Status, error) {
	var st sweeper.Status
	err := c.do(ctx, http.MethodPost, "/v1/sweepers/"+url.PathEscape(id)+"/start", nil, &st)
	return st, err
}

// StopSweeper records desired_running=false and stops the sweeper on the hub.
func (c *Client) StopSweeper(ctx context.Context, id string) (sweeper.Status, error) {
	var st sweeper.Status
	err := c.do(ctx, http.MethodPost, "/v1/sweepers/"+url.PathEscape(id)+"/stop", nil, &st)
	return st, err
}
