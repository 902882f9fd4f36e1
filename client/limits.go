package client

import (
	"context"

	"github.com/cks-dev/cks"
)

// SetLimit creates or replaces a concurrency limit (set_limit): at most
// in.MaxRunning CLAIMED or RUNNING tasks per key matching in.Pattern.
func (c *Client) SetLimit(ctx context.Context, in cks.LimitInput) (cks.Limit, error) {
	return Do(ctx, c, cks.OpSetLimit, in)
}

// Limits returns the concurrency limits, by name, each with the keys it
// governs that are held now (list_limits).
func (c *Client) Limits(ctx context.Context) ([]cks.LimitStatus, error) {
	out, err := Do(ctx, c, cks.OpListLimits, struct{}{})
	return out.Limits, err
}

// DeleteLimit deletes a concurrency limit (delete_limit); Deleted is false
// when there was none of the name.
func (c *Client) DeleteLimit(ctx context.Context, name string) (cks.LimitDeleted, error) {
	return Do(ctx, c, cks.OpDeleteLimit, cks.LimitNameInput{Name: name})
}
