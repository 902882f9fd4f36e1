package ops

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// Usage and budgets (issue 43 items 1 and 2; docs/spend.md).

// ReportUsage is report_usage.
var ReportUsage = executorOp(cks.OpReportUsage, Spec{
	Title: "Report usage", Status: http.StatusCreated, Hints: leaseCall,
	Summary: "record what a call of the current attempt spent (tokens, cost); a budget used up stops the task",
	Description: "Step 3 of the worker protocol, for agents that call paid models: after each call, record its model, " +
		"input_tokens, output_tokens and cost (a decimal string in USD, such as \"0.0125\": never a JSON number) under the " +
		"lease (201). The answer holds the report and the task's spend so far (spend) against its budget (max_tokens, " +
		"max_cost of create_task and update_task). When this report reaches the budget, budget_exceeded says what was " +
		"spent against what was allowed: the task moved to NEEDS_INPUT with that as its question and the attempt was " +
		"aborted in the same transaction (the lease is gone: stop, and confirm_abort). Usage is summed by get_usage.",
}, func(ctx context.Context, s *Services, in *cks.ReportUsageInput) (cks.UsageReport, error) {
	cost, err := parseCostField("cost", in.Cost)
	if err != nil {
		return cks.UsageReport{}, err
	}
	return s.Tasks.ReportUsage(ctx, in.TaskID, in.LeaseToken, cks.UsageInput{Principal: actor(ctx),
		Model: in.Model, InputTokens: in.InputTokens, OutputTokens: in.OutputTokens, Cost: cost})
})

// parseCostField is a cost field's value ("" is 0).
func parseCostField(field, s string) (cks.Cost, error) {
	if s == "" {
		return 0, nil
	}
	return cks.ParseCost(field, s)
}

// GetUsage is get_usage.
var GetUsage = define(cks.OpGetUsage, &Op[cks.GetUsageInput, cks.UsageSummary]{
	spec: Spec{
		Title:   "Get usage",
		Summary: "sums of the tokens and cost agents reported, by model, type, key, task, attempt, agent or principal, over time",
		Description: "Sum the usage reports (report_usage) of the last since (24h by default; 7d, 30d and a number of seconds " +
			"also do), grouped by any of model, type, key (a report counts once under each concurrency key its task " +
			"held), task, attempt, agent and principal, and with every also by time bucket (1h: tokens and cost per hour). " +
			"Filters: task_id, type, key, model. Rows are by bucket, then costliest first, at most limit (the rest " +
			"counted under truncated); total sums every report selected. Costs are exact decimal strings in USD. " +
			"Needs read on /tasks.",
		Permission: auth.PermRead, Resource: auth.ResourceTasks,
		Surfaces: HTTP | MCP | CLI, Needs: NeedTasks, Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, in *cks.GetUsageInput) (cks.UsageSummary, error) {
		since, err := usageDuration("since", string(cmp.Or(in.Since, "24h")), time.Second, cks.MaxUsageSince)
		if err != nil {
			return cks.UsageSummary{}, err
		}
		var every time.Duration
		if in.Every != "" {
			if every, err = usageDuration("every", string(in.Every), cks.MinUsageEvery, cks.MaxUsageSince); err != nil {
				return cks.UsageSummary{}, err
			}
		}
		now := s.clock().Now()
		return s.Tasks.GetUsage(ctx, ledger.UsageQuery{Since: now.Add(-since), Until: now.Add(time.Microsecond), By: in.By,
			Every: every, TaskID: in.TaskID, Type: in.Type, Key: in.Key, Model: in.Model,
			Limit: cmp.Or(in.Limit, cks.DefaultListLimit)})
	},
})

// usageDuration reads a window or bucket of get_usage: a duration
// (cks.ParseDuration) or a number of days ("7d"), from lo to hi.
func usageDuration(field, v string, lo, hi time.Duration) (time.Duration, error) {
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(v, "d"); ok {
		var n int
		if n, err = strconv.Atoi(days); err == nil {
			d = time.Duration(n) * 24 * time.Hour
		}
	} else {
		d, err = cks.ParseDuration(v)
	}
	if err != nil || d < lo || d > hi {
		return 0, &cks.FieldError{Field: field, Expected: fmt.Sprintf("a duration such as 1h, 24h or 7d, from %s to %.0f days",
			cks.FormatDuration(lo), hi.Hours()/24)}
	}
	return d, nil
}
