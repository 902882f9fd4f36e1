package ledger_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestTaskBudget (both backends): reports of a running attempt add up on
// the task; the report that reaches max_tokens moves the task to
// NEEDS_INPUT with a question naming what was spent against what was
// allowed, revokes the lease and requests the abort of its executor in the
// same transaction, and gives the attempt back; a stale token's report is
// refused and records nothing; raising the budget and answering runs the
// task again, and get_task shows each attempt's spend.
func TestTaskBudget(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		task := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "llm", MaxTokens: 1000, MaxCost: "0.50", ConcurrencyKeys: []string{"openai"}})
		if task.Spend == nil || task.Spend.MaxTokens != 1000 || task.Spend.MaxCost.String() != "0.5" {
			t.Fatalf("created task's spend %+v, want the budget 1000 tokens, 0.5", task.Spend)
		}
		c := backendtest.ClaimType(t, s, "w1", "llm")
		report := func(token string, in, out int64, cost string) (cks.UsageReport, error) {
			t.Helper()
			v, err := cks.ParseCost("cost", cost)
			if err != nil {
				t.Fatal(err)
			}
			return s.Tasks.ReportUsage(ctx, c.ID, token, cks.UsageInput{Principal: "agent-1",
				Model: "gpt-5", InputTokens: in, OutputTokens: out, Cost: v})
		}
		r, err := report(c.LeaseToken, 300, 200, "0.0125")
		if err != nil {
			t.Fatal(err)
		}
		if r.BudgetExceeded != "" || r.Spend.Tokens != 500 || r.Spend.Cost.String() != "0.0125" || r.Usage.Attempt != 1 ||
			r.Usage.Type != "llm" || len(r.Usage.ConcurrencyKeys) != 1 || r.Usage.Agent != "w1" {
			t.Fatalf("first report %+v; want 500 tokens, 0.0125, no breach, attempt 1 of type llm under openai by w1", r)
		}
		if _, err := report("not-the-token", 1, 1, "0"); !errors.Is(err, cks.ErrLeaseLost) {
			t.Fatalf("a report with a stale token: %v, want ErrLeaseLost", err)
		}
		r, err = report(c.LeaseToken, 400, 100, "0.01")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.BudgetExceeded, "spent 1000 tokens of the 1000 allowed (max_tokens)") {
			t.Fatalf("the report reaching max_tokens said budget_exceeded %q", r.BudgetExceeded)
		}
		got, err := s.Tasks.GetTask(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != cks.TaskNeedsInput || !strings.Contains(got.Question, "spent 1000 tokens of the 1000 allowed") ||
			got.Attempts != 0 || got.ClaimedBy != "" {
			t.Fatalf("after the breach: %s, question %q, attempts %d, claimed by %q; want NEEDS_INPUT naming the spend, the attempt given back, no holder",
				got.State, got.Question, got.Attempts, got.ClaimedBy)
		}
		if got.LastAbort == nil || got.LastAbort.RequestedBy != ledger.ActorBudget || got.LastAbort.Outcome != cks.AbortPending {
			t.Fatalf("after the breach the last abort is %+v; want one pending, requested by %q", got.LastAbort, ledger.ActorBudget)
		}
		if got.Spend == nil || got.Spend.Tokens != 1000 || got.Spend.Reports != 2 || got.Spend.Cost.String() != "0.0225" {
			t.Fatalf("task spend %+v, want 1000 tokens in 2 reports costing 0.0225", got.Spend)
		}
		if _, err := report(c.LeaseToken, 1, 1, "0"); !errors.Is(err, cks.ErrLeaseLost) {
			t.Fatalf("a report after the breach: %v, want ErrLeaseLost (the lease was revoked)", err)
		}

		// Raise the budget, answer: the task runs again, its spend kept.
		more := int64(5000)
		if _, err := s.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: c.ID, Actor: "op", Patch: cks.TaskPatch{MaxTokens: &more}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Tasks.Answer(ctx, c.ID, "op", "go on"); err != nil {
			t.Fatal(err)
		}
		c = backendtest.ClaimType(t, s, "w2", "llm")
		if r, err = report(c.LeaseToken, 10, 10, "0.001"); err != nil || r.BudgetExceeded != "" || r.Spend.Tokens != 1020 {
			t.Fatalf("a report after the raise: %+v, %v; want 1020 tokens and no breach", r, err)
		}
		got, err = s.Tasks.GetTask(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		// The attempt the budget stopped was given back: the run after the
		// answer is attempt 1 again, and its view sums both runs.
		if got.Current == nil || got.Current.Spend == nil || got.Current.Spend.Tokens != 1020 || got.Current.Spend.Reports != 3 {
			t.Fatalf("the current attempt's spend %+v, want 1020 tokens in 3 reports", got.Current)
		}
		var edit bool
		for _, e := range got.Events {
			for _, ch := range e.Changes {
				edit = edit || (ch.Field == "max_tokens" && string(ch.Old) == "1000" && string(ch.New) == "5000")
			}
		}
		if !edit {
			t.Fatal("the budget's edit is not in the history with its old and new value")
		}
	})
}

// TestBudgetRefusals (both backends): a budget or a report that cannot be
// is refused naming its field, and changes nothing.
func TestBudgetRefusals(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		for _, tc := range []struct {
			n     cks.NewTask
			field string
		}{
			{cks.NewTask{Type: "x", MaxTokens: -1}, "max_tokens"},
			{cks.NewTask{Type: "x", MaxCost: "-1"}, "max_cost"},
			{cks.NewTask{Type: "x", MaxCost: "1e3"}, "max_cost"},
			{cks.NewTask{Type: "x", MaxCost: strings.Repeat("9", 40)}, "max_cost"},
			{cks.NewTask{Type: "x", MaxCost: "0.0000000001"}, "max_cost"},
		} {
			if _, _, err := s.Tasks.Enqueue(ctx, tc.n); !cks.IsFieldError(err, tc.field) {
				t.Errorf("create %+v: %v, want a FieldError naming %s", tc.n, err, tc.field)
			}
		}
		if n, err := s.Tasks.CountTasks(ctx, cks.TaskFilter{}); err != nil || n != 0 {
			t.Fatalf("%d tasks after refused creates (%v), want 0", n, err)
		}
		backendtest.MustEnqueue(t, s, cks.NewTask{Type: "x"})
		c := backendtest.ClaimType(t, s, "w", "x")
		for _, tc := range []struct {
			p     cks.UsageInput
			field string
		}{
			{cks.UsageInput{InputTokens: -5}, "input_tokens"},
			{cks.UsageInput{OutputTokens: cks.MaxUsageTokens + 1}, "output_tokens"},
			{cks.UsageInput{Cost: -1}, "cost"},
			{cks.UsageInput{Model: strings.Repeat("m", cks.MaxModelLen+1)}, "model"},
		} {
			if _, err := s.Tasks.ReportUsage(ctx, c.ID, c.LeaseToken, tc.p); !cks.IsFieldError(err, tc.field) {
				t.Errorf("report %+v: %v, want a FieldError naming %s", tc.p, err, tc.field)
			}
		}
		if got, err := s.Tasks.GetTask(ctx, c.ID); err != nil || got.Spend != nil {
			t.Fatalf("after refused reports the task's spend is %+v (%v), want none", got.Spend, err)
		}
	})
}

// TestBudgetConcurrentReports (both backends): many reporters of one
// attempt at once never let two breaches both pass — exactly one report
// uses the budget up, every report before it is recorded, every one after
// it is refused as a lost lease, and the task moved to NEEDS_INPUT once.
func TestBudgetConcurrentReports(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		backendtest.MustEnqueue(t, s, cks.NewTask{Type: "llm", MaxTokens: 1000})
		c := backendtest.ClaimType(t, s, "w", "llm")
		const reporters, each = 8, 10
		var (
			mu       sync.Mutex
			breaches []string
			recorded int64
			lost     int
		)
		var wg sync.WaitGroup
		for range reporters {
			wg.Go(func() {
				for range each {
					r, err := s.Tasks.ReportUsage(ctx, c.ID, c.LeaseToken, cks.UsageInput{InputTokens: 60, OutputTokens: 40})
					mu.Lock()
					switch {
					case errors.Is(err, cks.ErrLeaseLost):
						lost++
					case err != nil:
						t.Error(err)
					default:
						recorded += 100
						if r.BudgetExceeded != "" {
							breaches = append(breaches, r.BudgetExceeded)
						}
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(breaches) != 1 || recorded != 1000 || lost != reporters*each-10 {
			t.Fatalf("%d breaches (%q), %d tokens recorded, %d refused; want exactly 1 breach at 1000 tokens and the other %d refused",
				len(breaches), breaches, recorded, lost, reporters*each-10)
		}
		got, err := s.Tasks.GetTask(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		var moves int
		for _, e := range got.Events {
			if e.To == cks.TaskNeedsInput {
				moves++
			}
		}
		if got.State != cks.TaskNeedsInput || moves != 1 || got.Spend.Tokens != 1000 || got.Spend.Reports != 10 {
			t.Fatalf("task %s with %d moves to NEEDS_INPUT, spend %+v; want NEEDS_INPUT once, 1000 tokens in 10 reports", got.State, moves, got.Spend)
		}
	})
}

// TestGetUsage (both backends, injected clock): get_usage sums the reports
// of its window by any of its dimensions (a report counting once for each
// of its keys under "key"), by time bucket, filtered, costliest first,
// truncated at its limit with the rest counted.
func TestGetUsage(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		backendtest.MustEnqueue(t, s, cks.NewTask{Type: "research", ConcurrencyKeys: []string{"openai", "team:a"}})
		backendtest.MustEnqueue(t, s, cks.NewTask{Type: "summarize", ConcurrencyKeys: []string{"anthropic"}})
		claim := func(worker, typ string) cks.ClaimedTask {
			t.Helper()
			ts, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: worker, Types: []string{typ}, N: 1, Lease: 6 * time.Hour})
			if err != nil || len(ts) != 1 {
				t.Fatalf("claim %s: %v, %v", typ, ts, err)
			}
			return ts[0]
		}
		r1, r2 := claim("w1", "research"), claim("w2", "summarize")
		rep := func(cl cks.ClaimedTask, model string, tokens int64, cost string, at time.Duration) {
			t.Helper()
			c.Set(backendtest.T0.Add(at))
			v, _ := cks.ParseCost("cost", cost)
			if _, err := s.Tasks.ReportUsage(ctx, cl.ID, cl.LeaseToken, cks.UsageInput{Model: model,
				InputTokens: tokens, Cost: v}); err != nil {
				t.Fatal(err)
			}
		}
		rep(r1, "gpt-5", 100, "0.10", 10*time.Minute)
		rep(r1, "gpt-5", 200, "0.20", 70*time.Minute)
		rep(r2, "claude", 50, "0.05", 75*time.Minute)
		rep(r1, "gpt-5-mini", 1000, "0.01", 80*time.Minute)
		now := backendtest.T0.Add(2 * time.Hour)
		sum := func(q ledger.UsageQuery) cks.UsageSummary {
			t.Helper()
			if q.Until.IsZero() {
				q.Since, q.Until = backendtest.T0, now
			}
			if q.Limit == 0 {
				q.Limit = 100
			}
			out, err := s.Tasks.GetUsage(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		all := sum(ledger.UsageQuery{})
		if all.Total.Reports != 4 || all.Total.Tokens != 1350 || all.Total.Cost.String() != "0.36" || len(all.Rows) != 1 {
			t.Fatalf("total %+v with %d rows; want 4 reports, 1350 tokens, 0.36 in one row", all.Total, len(all.Rows))
		}
		byModel := sum(ledger.UsageQuery{By: []string{"model"}})
		if len(byModel.Rows) != 3 || byModel.Rows[0].Group["model"] != "gpt-5" || byModel.Rows[0].Cost.String() != "0.3" ||
			byModel.Rows[2].Group["model"] != "gpt-5-mini" {
			t.Fatalf("by model %+v; want gpt-5 (0.3) first, gpt-5-mini last", byModel.Rows)
		}
		byKey := sum(ledger.UsageQuery{By: []string{"key"}})
		keys := map[string]int64{}
		for _, r := range byKey.Rows {
			keys[r.Group["key"]] = r.Tokens
		}
		if len(keys) != 3 || keys["openai"] != 1300 || keys["team:a"] != 1300 || keys["anthropic"] != 50 {
			t.Fatalf("by key %v; want openai and team:a 1300 each, anthropic 50", keys)
		}
		hourly := sum(ledger.UsageQuery{By: []string{"type"}, Every: time.Hour})
		if len(hourly.Rows) != 3 || !hourly.Rows[0].Start.Equal(backendtest.T0.Truncate(time.Hour)) || hourly.Rows[0].Tokens != 100 {
			t.Fatalf("hourly by type %+v; want 3 rows, the first of the first hour with 100 tokens", hourly.Rows)
		}
		if f := sum(ledger.UsageQuery{Key: "anthropic"}); f.Total.Tokens != 50 {
			t.Fatalf("key filter: %+v, want 50 tokens", f.Total)
		}
		if f := sum(ledger.UsageQuery{Since: backendtest.T0.Add(time.Hour), Until: now}); f.Total.Reports != 3 {
			t.Fatalf("the last hour's window holds %d reports, want 3", f.Total.Reports)
		}
		if f := sum(ledger.UsageQuery{By: []string{"model"}, Limit: 1}); len(f.Rows) != 1 || f.Truncated != 2 {
			t.Fatalf("limit 1: %d rows, %d truncated; want 1 and 2", len(f.Rows), f.Truncated)
		}
		if _, err := s.Tasks.GetUsage(ctx, ledger.UsageQuery{By: []string{"color"}, Limit: 1}); !cks.IsFieldError(err, "by") {
			t.Fatalf("by color: %v, want a FieldError naming by", err)
		}
	})
}

// TestKeyBudget (both backends, injected clock, two hubs): a limit's spend
// budget (max_tokens per window) holds back the tasks of a key whose
// reports reached it in the current window — on the hub that took the
// reports and on another — while the tasks of other keys are claimed; the
// key's tasks are claimable again when the next window starts, and
// list_limits shows the window's spend.
func TestKeyBudget(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0.Add(10 * time.Minute))
		s, hub2 := open(t, driver.WithClock(c)), open(t, driver.WithClock(c))
		ctx := context.Background()
		if _, err := s.Tasks.SetLimit(ctx, ledger.SetLimitParams{Actor: "ops",
			LimitInput: cks.LimitInput{Name: "openai", Pattern: "openai", MaxTokens: 100, Window: "1h"}}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			backendtest.MustEnqueue(t, s, cks.NewTask{Type: "llm", Priority: 5, ConcurrencyKeys: []string{"openai"}})
		}
		other := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "llm", ConcurrencyKeys: []string{"anthropic"}})
		claim := func(on *ledger.Service) []cks.ClaimedTask {
			t.Helper()
			got, err := on.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"llm"}, N: 1, Lease: 2 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		first := claim(s.Tasks)
		if len(first) != 1 || first[0].ID == other.ID {
			t.Fatalf("first claim %v; want a task of openai", ids(first))
		}
		for _, tokens := range []int64{60, 40} {
			if _, err := s.Tasks.ReportUsage(ctx, first[0].ID, first[0].LeaseToken, cks.UsageInput{InputTokens: tokens}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Tasks.Complete(ctx, first[0].ID, first[0].LeaseToken, false, "done"); err != nil {
			t.Fatal(err)
		}
		// openai spent its 100 tokens this hour: the other key's task only,
		// on either hub.
		if got := claim(hub2.Tasks); len(got) != 1 || got[0].ID != other.ID {
			t.Fatalf("claim after the budget was spent: %v; want only task %d of anthropic", ids(got), other.ID)
		}
		if got := claim(s.Tasks); len(got) != 0 {
			t.Fatalf("claim with openai spent: %v; want none", ids(got))
		}
		ls, err := s.Tasks.Limits(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if l := ls.Limits[0]; l.MaxTokens != 100 || l.Window != "1h" || l.Saturated != 1 || len(l.Keys) != 1 || l.Keys[0].Tokens != 100 {
			t.Fatalf("list_limits %+v; want openai's window spend of 100 tokens, saturated", l)
		}
		c.Set(backendtest.T0.Add(time.Hour - time.Millisecond))
		if got := claim(s.Tasks); len(got) != 0 {
			t.Fatalf("claim a millisecond before the next window: %v; want none", ids(got))
		}
		c.Set(backendtest.T0.Add(time.Hour))
		if got := claim(hub2.Tasks); len(got) != 1 || got[0].ID == other.ID {
			t.Fatalf("claim in the next window: %v; want a task of openai", ids(got))
		}
	})
}

// TestKeyBudgetRefusals: a limit's budget without a window, a window
// without a budget, a window out of bounds or a cost that is not one is
// refused naming the field, and stores nothing.
func TestKeyBudgetRefusals(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		for _, tc := range []struct {
			in    cks.LimitInput
			field string
		}{
			{cks.LimitInput{MaxTokens: 100}, "window"},
			{cks.LimitInput{MaxCost: "5", Window: "30s"}, "window"},
			{cks.LimitInput{MaxCost: "5", Window: "800h"}, "window"},
			{cks.LimitInput{Window: "1h"}, "max_tokens"},
			{cks.LimitInput{MaxCost: "5 USD", Window: "1h"}, "max_cost"},
			{cks.LimitInput{MaxTokens: -1, Window: "1h"}, "max_tokens"},
		} {
			tc.in.Name, tc.in.Pattern = "b", "openai"
			if _, err := s.Tasks.SetLimit(ctx, ledger.SetLimitParams{LimitInput: tc.in}); !cks.IsFieldError(err, tc.field) {
				t.Errorf("set_limit %+v: %v, want a FieldError naming %s", tc.in, err, tc.field)
			}
		}
		if ls, err := s.Tasks.Limits(ctx); err != nil || len(ls.Limits) != 0 {
			t.Fatalf("limits after refused sets: %+v, %v; want none", ls, err)
		}
	})
}
