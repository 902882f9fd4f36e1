package client

import (
	"context"

	"github.com/cks-dev/cks"
)

// PauseType pauses a task type fleet-wide (pause_type): no claim takes its
// tasks until ResumeType. It returns the pause in force.
func (c *Client) PauseType(ctx context.Context, typ, reason string) (cks.PausedType, error) {
	return Do(ctx, c, cks.OpPauseType, cks.PauseTypeInput{Type: typ, Reason: reason})
}

// ResumeType lifts a type's pause (resume_type); Resumed is false when it
// was not paused.
func (c *Client) ResumeType(ctx context.Context, typ string) (cks.TypeResumed, error) {
	return Do(ctx, c, cks.OpResumeType, cks.TypeInput{Type: typ})
}

// PausedTypes returns the paused task types, by type (list_paused_types).
func (c *Client) PausedTypes(ctx context.Context) ([]cks.PausedType, error) {
	out, err := Do(ctx, c, cks.OpListPausedTypes, struct{}{})
	return out.Types, err
}
