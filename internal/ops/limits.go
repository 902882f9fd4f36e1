package ops

import (
	"context"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// The concurrency limits (issue 42 item 1): named rules capping how many
// CLAIMED or RUNNING tasks may hold each concurrency key.

const limitNote = " A task carries up to 4 concurrency_keys (create_task, update_task), such as openai or openai:gpt-5. " +
	"A limit's pattern is a key (openai) or a prefix ending in * (user:*, or * for every key); each key it matches has a " +
	"cap of its own, and a key is governed by its most specific limit (an exact pattern before a prefix, a longer prefix " +
	"before a shorter). No claim of any hub or agent on the database hands out a task while one of its keys holds its cap " +
	"in CLAIMED and RUNNING tasks; the tasks of other keys behind it are claimed instead. Resources: /limits and /limits/NAME."

// limitResource is the resource of the limit named name: /limits/NAME.
func limitResource(name string) (string, error) {
	if err := cks.ValidateLimitName("name", name); err != nil {
		return "", err
	}
	return auth.ResourceLimits + "/" + name, nil
}

// SetLimit is set_limit.
var SetLimit = define(cks.OpSetLimit, &Op[cks.LimitInput, cks.Limit]{
	spec: Spec{
		Title:   "Set concurrency limit",
		Summary: "create or replace a concurrency or rate limit on task keys",
		Description: "Create the limit named name, or replace its pattern, max_running, starts and interval. From its commit " +
			"on, no claim hands out a task while one of its keys matching the pattern is held by max_running CLAIMED or " +
			"RUNNING tasks, or while starts tasks holding that key were claimed in the last interval (a sliding window: a " +
			"task is claimable again the moment the oldest start leaves it, and waiting claims are woken then); attempts " +
			"already running are counted, never stopped. With max_tokens and/or max_cost (USD) per window, a spend budget: " +
			"once the tasks holding a key reported that much (report_usage) in the current window — windows aligned to the " +
			"Unix epoch, 24h being UTC days — no task holding it is claimed until the next window (running attempts go on; " +
			"a task's own max_tokens and max_cost stop it). Any of the three kinds, or several. A pattern another " +
			"limit has is refused. Answers the limit." + limitNote + " Needs control on /limits/NAME.",
		Permission: auth.PermControl, Resource: auth.ResourceLimits + "/{name}",
		Surfaces: HTTP | MCP | CLI, Needs: NeedTasks,
		Hints: Hints{Destructive: new(false), OpenWorld: new(false)},
	},
	check: func(in *cks.LimitInput) error { return in.Validate() },
	resource: func(_ context.Context, _ *Services, in *cks.LimitInput) (string, error) {
		return limitResource(in.Name)
	},
	call: func(ctx context.Context, s *Services, in *cks.LimitInput) (cks.Limit, error) {
		return s.Tasks.SetLimit(ctx, ledger.SetLimitParams{LimitInput: *in, Actor: actor(ctx)})
	},
})

// ListLimits is list_limits.
var ListLimits = define(cks.OpListLimits, &Op[struct{}, cks.LimitList]{
	spec: Spec{
		Title:   "List concurrency limits",
		Summary: "the concurrency limits, each with its keys held now",
		Description: "List the limits, by name, under \"limits\": name, pattern, max_running, created_by, created_at, " +
			"updated_at, starts and interval (a rate limit); keys, the keys it governs that are held now or were claimed in " +
			"the rate window, with how many tasks hold each (running) and were claimed in the window (started), the most " +
			"held first, at most 20; held, how many such keys; saturated, how many are at the cap or the rate." + limitNote + " Needs read on /limits.",
		Permission: auth.PermRead, Resource: auth.ResourceLimits,
		Surfaces: HTTP | MCP | CLI, Needs: NeedTasks, Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, _ *struct{}) (cks.LimitList, error) {
		return s.Tasks.Limits(ctx)
	},
})

// DeleteLimit is delete_limit.
var DeleteLimit = define(cks.OpDeleteLimit, &Op[cks.LimitNameInput, cks.LimitDeleted]{
	spec: Spec{
		Title:   "Delete concurrency limit",
		Summary: "delete a concurrency limit",
		Description: "Delete a limit: the keys it governed are free of it at once (waiting claims are woken), or governed by " +
			"the next most specific limit. deleted is false when no limit had the name (nothing changed)." + limitNote +
			" Needs control on /limits/NAME.",
		Permission: auth.PermControl, Resource: auth.ResourceLimits + "/{name}",
		Surfaces: HTTP | MCP | CLI, Needs: NeedTasks,
		Hints: Hints{Destructive: new(true), OpenWorld: new(false)},
	},
	resource: func(_ context.Context, _ *Services, in *cks.LimitNameInput) (string, error) {
		return limitResource(in.Name)
	},
	call: func(ctx context.Context, s *Services, in *cks.LimitNameInput) (cks.LimitDeleted, error) {
		return s.Tasks.DeleteLimit(ctx, in.Name)
	},
})
