package ledger

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// Usage and budgets (issue 43 items 1 and 2; docs/spend.md): what the
// attempts of a task report spending, and the task's budget, which stops
// the task in the transaction that records the report using it up.

// ActorBudget is the actor of the move and the abort of a task whose
// budget a report used up.
const ActorBudget = "budget"

// validateUsage refuses, naming the field, what no report may say.
func validateUsage(p cks.UsageInput) error {
	switch {
	case p.InputTokens < 0 || p.InputTokens > cks.MaxUsageTokens:
		return &cks.FieldError{Field: "input_tokens", Expected: fmt.Sprintf("a count of tokens from 0 to %d", int64(cks.MaxUsageTokens))}
	case p.OutputTokens < 0 || p.OutputTokens > cks.MaxUsageTokens:
		return &cks.FieldError{Field: "output_tokens", Expected: fmt.Sprintf("a count of tokens from 0 to %d", int64(cks.MaxUsageTokens))}
	case p.Cost < 0:
		return &cks.FieldError{Field: "cost", Expected: "a cost of 0 or more"}
	case len(p.Model) > cks.MaxModelLen:
		return &cks.FieldError{Field: "model", Expected: fmt.Sprintf("a model name of at most %d bytes", cks.MaxModelLen)}
	}
	return cks.ValidateText("model", p.Model)
}

// ReportUsage records what one call of task id's running attempt spent
// (u), fenced by token like every executor call (ErrLeaseLost for a token that
// no longer holds the lease), and adds it to the task's spend. When the
// spend reaches the task's budget (max_tokens or max_cost), the same
// transaction moves the task to NEEDS_INPUT, with a question naming what
// was spent against what was allowed, and aborts the attempt through the
// abort path a stop uses: the lease revoked, a pending abort recorded and
// published (so an exec agent kills its command), the attempt given back
// (it does not count against max_attempts). Reports of one task take
// turns on its row, so exactly one of them is the one that used the
// budget up, however many run at once.
func (s *Service) ReportUsage(ctx context.Context, id int64, token string, p cks.UsageInput) (cks.UsageReport, error) {
	if err := validateUsage(p); err != nil {
		return cks.UsageReport{}, err
	}
	var out cks.UsageReport
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		cur, err := leased(ctx, ex, now, id, token, executing...)
		if err != nil {
			return err
		}
		u, err := ex.UsageInsert(ctx, driver.UsageRow{TaskID: cur.ID, Attempt: cur.Attempts, Restart: cur.Restarts,
			Type: cur.Type, ConcurrencyKeys: cur.ConcurrencyKeys, Model: p.Model, InputTokens: p.InputTokens,
			OutputTokens: p.OutputTokens, CostNanos: int64(p.Cost), Currency: cks.CurrencyUSD, Agent: cur.ClaimedBy,
			Principal: p.Principal, ReportedAt: now})
		if err != nil {
			return fmt.Errorf("usage of task %d: %w", cur.ID, err)
		}
		sp, err := spendRow(ctx, ex, cur.ID)
		if err != nil {
			return err
		}
		sp.InputTokens += p.InputTokens
		sp.OutputTokens += p.OutputTokens
		sp.CostNanos += int64(p.Cost)
		sp.Reports++
		if err := ex.TaskSpendPut(ctx, sp); err != nil {
			return fmt.Errorf("spend of task %d: %w", cur.ID, err)
		}
		if err := addKeySpend(ctx, ex, now, cur, p); err != nil {
			return err
		}
		out = cks.UsageReport{Spend: toSpend(sp)}
		if out.Usage, err = toUsage(u); err != nil {
			return err
		}
		over := out.Spend.Over()
		if over == "" {
			return nil
		}
		out.BudgetExceeded = over
		return s.overBudget(ctx, ex, now, cur, over)
	})
	if err == nil && s.observer != nil {
		s.observer.UsageReported(out.Usage)
	}
	return out, err
}

// addKeySpend adds report p of task cur (with keys) to the current window
// of each of its keys whose governing limit has a spend budget: what the
// keyed claims read to hold back a key that spent its budget.
func addKeySpend(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow, p cks.UsageInput) error {
	keys, err := decodeKeys(cur.ConcurrencyKeys)
	if err != nil || len(keys) == 0 || (p.InputTokens+p.OutputTokens == 0 && p.Cost == 0) {
		return err
	}
	rows, err := ex.LimitList(ctx, driver.LimitListParams{})
	if err != nil || len(rows) == 0 {
		return err
	}
	k := newKeyCaps(now, rows)
	for _, key := range keys {
		g := k.governor(key)
		if g < 0 || k.windows[g] == 0 {
			continue
		}
		w := k.windows[g]
		if err := ex.KeySpendAdd(ctx, driver.KeySpendRow{WindowMs: w.Milliseconds(), WindowStart: windowStart(now, w), Key: key,
			Tokens: p.InputTokens + p.OutputTokens, CostNanos: int64(p.Cost)}); err != nil {
			return fmt.Errorf("spend of key %q: %w", key, err)
		}
	}
	return nil
}

// budgetQuestion is the question of a task stopped by its budget.
func budgetQuestion(over string) string {
	return "budget: " + over + ". Raise the budget (update_task max_tokens or max_cost) and answer to run the task again, or cancel it."
}

// overBudget ends cur's running attempt because its spend reached its
// budget (over says which): NEEDS_INPUT with the budget's question, its
// lease revoked and its abort requested, the attempt given back.
func (s *Service) overBudget(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow, over string) error {
	q := budgetQuestion(over)
	if _, err := insertAbort(ctx, ex, now, cur, ActorBudget, "budget: "+over, cks.DefaultAbortDeadline); err != nil {
		return err
	}
	_, err := moveOne(ctx, ex, now, move{row: cur, to: cks.TaskNeedsInput, actor: ActorBudget, reason: q,
		attempt: cur.Attempts, set: func(r *driver.TaskRow) {
			r.Question, r.Answer = q, ""
			r.Attempts--
			revoke(r)
		}})
	return err
}

// spendRow is task id's spend row, zero (with its id) when it has none.
func spendRow(ctx context.Context, ex driver.Executor, id int64) (driver.TaskSpendRow, error) {
	rows, err := ex.TaskSpendGet(ctx, id)
	if err != nil {
		return driver.TaskSpendRow{}, fmt.Errorf("spend of task %d: %w", id, err)
	}
	if len(rows) == 0 {
		return driver.TaskSpendRow{TaskID: id}, nil
	}
	return rows[0], nil
}

// toSpend is the view of a spend row.
func toSpend(r driver.TaskSpendRow) cks.TaskSpend {
	return cks.TaskSpend{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Tokens: r.InputTokens + r.OutputTokens,
		Cost: cks.Cost(r.CostNanos), Reports: r.Reports, MaxTokens: r.MaxTokens, MaxCost: cks.Cost(r.MaxCostNanos),
		Currency: cks.CurrencyUSD}
}

// toUsage is the view of a usage row.
func toUsage(r driver.UsageRow) (cks.Usage, error) {
	keys, err := decodeKeys(r.ConcurrencyKeys)
	if err != nil {
		return cks.Usage{}, err
	}
	return cks.Usage{ID: r.ID, TaskID: r.TaskID, Attempt: r.Attempt, Restart: r.Restart, Type: r.Type,
		ConcurrencyKeys: keys, Model: r.Model, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		Cost: cks.Cost(r.CostNanos), Currency: r.Currency, Agent: r.Agent, Principal: r.Principal,
		ReportedAt: r.ReportedAt.UTC()}, nil
}

// budget is a task's budget as create and update set it: MaxTokens and
// MaxCost (0: none).
type budget struct {
	MaxTokens int64
	MaxCost   cks.Cost
}

// parseBudget reads a task's budget fields (maxCost a decimal string, ""
// for none), refusing what a budget cannot be with a FieldError naming
// the field under prefix (as name makes it: "max_tokens" or
// "tasks[2].max_tokens").
func parseBudget(maxTokens int64, maxCost string, name func(field string) string) (budget, error) {
	tokens, cost, err := cks.ParseBudget(maxTokens, maxCost, name)
	return budget{MaxTokens: tokens, MaxCost: cost}, err
}

// patchBudget is task id's budget and the one p makes of it (the same
// when p sets none).
func patchBudget(ctx context.Context, ex driver.Executor, id int64, p cks.TaskPatch) (old, patched budget, err error) {
	if p.MaxTokens == nil && p.MaxCost == nil {
		return old, old, nil
	}
	sp, err := spendRow(ctx, ex, id)
	if err != nil {
		return old, old, err
	}
	old = budget{MaxTokens: sp.MaxTokens, MaxCost: cks.Cost(sp.MaxCostNanos)}
	tokens, cost := old.MaxTokens, old.MaxCost.String()
	if p.MaxTokens != nil {
		tokens = *p.MaxTokens
	}
	if p.MaxCost != nil {
		cost = cmp.Or(*p.MaxCost, "0")
	}
	patched, err = parseBudget(tokens, cost, func(f string) string { return f })
	return old, patched, err
}

// set reports whether b bounds anything.
func (b budget) set() bool { return b.MaxTokens > 0 || b.MaxCost > 0 }

// putBudget sets task id's budget, keeping what it spent.
func putBudget(ctx context.Context, ex driver.Executor, id int64, b budget) (driver.TaskSpendRow, error) {
	sp, err := spendRow(ctx, ex, id)
	if err != nil {
		return sp, err
	}
	sp.MaxTokens, sp.MaxCostNanos = b.MaxTokens, int64(b.MaxCost)
	if err := ex.TaskSpendPut(ctx, sp); err != nil {
		return sp, fmt.Errorf("budget of task %d: %w", id, err)
	}
	return sp, nil
}

// usagePage is how many reports one read of a window takes.
const usagePage = 2000

// spendOfTask fills t's spend and each of its attempts' from its spend
// row and reports (read in ex): a task without either is left as it is.
func spendOfTask(ctx context.Context, ex driver.Executor, t *cks.Task) error {
	rows, err := ex.TaskSpendGet(ctx, t.ID)
	if err != nil || len(rows) == 0 {
		return err
	}
	sp := toSpend(rows[0])
	t.Spend = &sp
	if sp.Reports == 0 {
		return nil
	}
	type at struct{ restart, attempt int }
	sums := map[at]*cks.UsageSum{}
	for after := int64(0); ; {
		us, err := ex.UsageOfTask(ctx, driver.UsageOfTaskParams{TaskID: t.ID, After: after, Limit: usagePage})
		if err != nil {
			return err
		}
		for _, u := range us {
			k := at{u.Restart, u.Attempt}
			if sums[k] == nil {
				sums[k] = &cks.UsageSum{}
			}
			add(sums[k], u)
		}
		if len(us) < usagePage {
			break
		}
		after = us[len(us)-1].ID
	}
	attach := func(v *cks.AttemptView) {
		if s := sums[at{v.Restart, v.Attempt}]; s != nil {
			v.Spend = s
			delete(sums, at{v.Restart, v.Attempt})
		}
	}
	for i := range t.History {
		attach(&t.History[i])
	}
	if t.Current != nil {
		attach(t.Current)
	}
	// Attempts with reports and nothing else recorded get a view of their own.
	for _, k := range slices.SortedFunc(maps.Keys(sums), func(a, b at) int {
		return cmp.Or(cmp.Compare(a.restart, b.restart), cmp.Compare(a.attempt, b.attempt))
	}) {
		t.History = append(t.History, cks.AttemptView{Restart: k.restart, Attempt: k.attempt, Spend: sums[k]})
	}
	return nil
}

// add adds report u to sum s.
func add(s *cks.UsageSum, u driver.UsageRow) {
	s.Reports++
	s.InputTokens += u.InputTokens
	s.OutputTokens += u.OutputTokens
	s.Tokens += u.InputTokens + u.OutputTokens
	s.Cost += cks.Cost(u.CostNanos)
}

// UsageQuery is what GetUsage sums: the reports of the window [Since,
// Until) that match the filters, grouped By (cks.UsageGroupings) and, with
// Every, by time bucket.
type UsageQuery struct {
	Since, Until time.Time
	By           []string
	Every        time.Duration
	TaskID       int64
	Type, Key    string
	Model        string
	Limit        int
}

// GetUsage sums the reports q selects. Rows are ordered by bucket, then
// costliest (and most tokens) first, then by group; at most q.Limit of
// them, the rest counted in Truncated; Total sums every report selected.
// The window is read a page at a time in the order of its time
// (idx_usage_reported), so memory holds the groups, not the reports.
func (s *Service) GetUsage(ctx context.Context, q UsageQuery) (cks.UsageSummary, error) {
	for _, b := range q.By {
		if !slices.Contains(cks.UsageGroupings, b) {
			return cks.UsageSummary{}, &cks.FieldError{Field: "by", Expected: "any of " + strings.Join(cks.UsageGroupings, ", ") + ", got " + strconv.Quote(b)}
		}
	}
	out := cks.UsageSummary{Since: q.Since.UTC(), Until: q.Until.UTC(), By: q.By, Currency: cks.CurrencyUSD, Rows: []cks.UsageSum{}}
	if q.Every > 0 {
		out.Every = cks.Duration(cks.FormatDuration(q.Every))
	}
	type gkey struct {
		start int64
		group string
	}
	groups := map[gkey]*cks.UsageSum{}
	err := s.read(ctx, func(ctx context.Context, ex driver.Executor) error {
		p := driver.UsagePageParams{AfterAt: driver.Time(q.Since), Until: driver.Time(q.Until), Limit: usagePage}
		for {
			rows, err := ex.UsagePage(ctx, p)
			if err != nil {
				return err
			}
			for _, r := range rows {
				keys, err := decodeKeys(r.ConcurrencyKeys)
				if err != nil {
					return err
				}
				if !q.matches(r, keys) {
					continue
				}
				add(&out.Total, r)
				var start int64
				if q.Every > 0 {
					start = r.ReportedAt.UTC().Truncate(q.Every).UnixNano()
				}
				for _, g := range q.groupsOf(r, keys) {
					k := gkey{start, g}
					if groups[k] == nil {
						groups[k] = &cks.UsageSum{Group: q.groupMap(g)}
						if q.Every > 0 {
							groups[k].Start = time.Unix(0, start).UTC()
						}
					}
					add(groups[k], r)
				}
			}
			if len(rows) < usagePage {
				return nil
			}
			last := rows[len(rows)-1]
			p.AfterAt, p.AfterID = last.ReportedAt, last.ID
		}
	})
	if err != nil {
		return out, err
	}
	for _, g := range groups {
		out.Rows = append(out.Rows, *g)
	}
	slices.SortFunc(out.Rows, func(a, b cks.UsageSum) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(b.Cost, a.Cost), cmp.Compare(b.Tokens, a.Tokens),
			strings.Compare(fmt.Sprint(a.Group), fmt.Sprint(b.Group)))
	})
	if len(out.Rows) > q.Limit {
		out.Truncated = len(out.Rows) - q.Limit
		out.Rows = out.Rows[:q.Limit]
	}
	return out, nil
}

// matches reports whether report r (whose task held keys) passes q's filters.
func (q UsageQuery) matches(r driver.UsageRow, keys []string) bool {
	return (q.TaskID == 0 || r.TaskID == q.TaskID) && (q.Type == "" || r.Type == q.Type) &&
		(q.Model == "" || r.Model == q.Model) && (q.Key == "" || slices.Contains(keys, q.Key))
}

// groupSep separates the values of a group's dimensions in its map key:
// no text of a report holds it (cks.ValidateText refuses control bytes).
const groupSep = "\x00"

// groupsOf are the groups report r counts in: one, but for "key", which
// counts a report once for each of its keys (none: the group "").
func (q UsageQuery) groupsOf(r driver.UsageRow, keys []string) []string {
	out := []string{""}
	for i, b := range q.By {
		vals := []string{q.value(b, r)}
		if b == "key" {
			vals = keys
			if len(vals) == 0 {
				vals = []string{""}
			}
		}
		var next []string
		for _, o := range out {
			for _, v := range vals {
				if i > 0 {
					v = groupSep + v
				}
				next = append(next, o+v)
			}
		}
		out = next
	}
	return out
}

// value is r's value of dimension b (not "key").
func (q UsageQuery) value(b string, r driver.UsageRow) string {
	switch b {
	case "model":
		return r.Model
	case "type":
		return r.Type
	case "task":
		return strconv.FormatInt(r.TaskID, 10)
	case "attempt":
		return strconv.FormatInt(r.TaskID, 10) + "/" + strconv.Itoa(r.Restart) + "/" + strconv.Itoa(r.Attempt)
	case "agent":
		return r.Agent
	case "principal":
		return r.Principal
	}
	return ""
}

// groupMap is group key g as its row's Group (nil for no dimension).
func (q UsageQuery) groupMap(g string) map[string]string {
	if len(q.By) == 0 {
		return nil
	}
	vals := strings.Split(g, groupSep)
	m := make(map[string]string, len(q.By))
	for i, b := range q.By {
		m[b] = vals[i]
	}
	return m
}
