package client

import (
	"context"

	"github.com/cks-dev/cks"
)

// CreateSchedule creates schedule n (create_schedule): a task from its
// template at each slot of its cron expression.
func (c *Client) CreateSchedule(ctx context.Context, n cks.NewSchedule) (cks.Schedule, error) {
	return Do(ctx, c, cks.OpCreateSchedule, n)
}

// ListSchedules returns every schedule, each with its next five fire times
// and its last fire.
func (c *Client) ListSchedules(ctx context.Context) ([]cks.Schedule, error) {
	out, err := Do(ctx, c, cks.OpListSchedules, struct{}{})
	return out.Schedules, err
}

// GetSchedule returns the schedule name.
func (c *Client) GetSchedule(ctx context.Context, name string) (cks.Schedule, error) {
	return Do(ctx, c, cks.OpGetSchedule, cks.ScheduleInput{Name: name})
}

// PauseSchedule stops the schedule name firing until resumed.
func (c *Client) PauseSchedule(ctx context.Context, name string) (cks.Schedule, error) {
	return Do(ctx, c, cks.OpPauseSchedule, cks.ScheduleInput{Name: name})
}

// ResumeSchedule lets the paused schedule name fire again, from its next
// slot.
func (c *Client) ResumeSchedule(ctx context.Context, name string) (cks.Schedule, error) {
	return Do(ctx, c, cks.OpResumeSchedule, cks.ScheduleInput{Name: name})
}

// TriggerSchedule fires the schedule name now, once, and returns the task.
func (c *Client) TriggerSchedule(ctx context.Context, name string) (cks.ScheduleFired, error) {
	return Do(ctx, c, cks.OpTriggerSchedule, cks.ScheduleInput{Name: name})
}

// DeleteSchedule deletes the schedule name (its tasks stay).
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	_, err := Do(ctx, c, cks.OpDeleteSchedule, cks.ScheduleInput{Name: name})
	return err
}
