package studio_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/surface/api"
	"github.com/cks-dev/cks/internal/surface/studio"
)

// newSpendEnv is the hub's API (with the studio behind it) over a store
// whose services tell the time by a fake clock at T0.
func newSpendEnv(t *testing.T, open backendtest.Opener) flowEnv {
	t.Helper()
	c := clock.NewFake(backendtest.T0)
	b := open(t, driver.WithClock(c))
	services := &ops.Services{Tasks: b.Tasks, Principals: b.Principals, Clock: c}
	a := api.New(api.Config{Services: services, Studio: studio.New(services, studio.Options{Version: "v-test"})})
	t.Cleanup(a.CloseStreams)
	return flowEnv{b: b, clock: c, h: a}
}

// reportUsage reports one call of the attempt claim holds (report_usage).
func reportUsage(t testing.TB, b *backend.Backend, claim cks.ClaimedTask, model string, in, out int64, cost string) cks.UsageReport {
	t.Helper()
	v, err := cks.ParseCost("cost", cost)
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Tasks.ReportUsage(context.Background(), claim.ID, claim.LeaseToken, cks.UsageInput{Principal: "agent",
		Model: model, InputTokens: in, OutputTokens: out, Cost: v})
	if err != nil {
		t.Fatalf("report usage of task %d: %v", claim.ID, err)
	}
	return r
}

// seedSpend reports, on e's clock: a call of gpt-4 costing 1 USD a
// little over a day before now (outside the last 24 hours); two of gpt-5
// by the task llm (key openai), an hour apart, and one of claude by the
// task summarize (no key). It returns the two tasks' ids; the clock ends
// at 2026-12-01 14:11 UTC.
func seedSpend(t *testing.T, e flowEnv) (llm, summarize int64) {
	t.Helper()
	backendtest.MustEnqueue(t, e.b, cks.NewTask{Type: "archive"})
	e.clock.Advance(time.Minute)
	reportUsage(t, e.b, backendtest.ClaimType(t, e.b, "w0", "archive"), "gpt-4", 100, 0, "1")
	e.clock.Advance(25 * time.Hour) // 2026-12-01 13:01
	backendtest.MustEnqueue(t, e.b, cks.NewTask{Type: "llm", ConcurrencyKeys: []string{"openai"}})
	backendtest.MustEnqueue(t, e.b, cks.NewTask{Type: "summarize"})
	a := claimLong(t, e.b, "w1", "llm")
	reportUsage(t, e.b, a, "gpt-5", 1200, 300, "0.0125")
	e.clock.Advance(time.Hour) // 14:01
	reportUsage(t, e.b, a, "gpt-5", 800, 200, "0.01")
	b := claimLong(t, e.b, "w2", "summarize")
	reportUsage(t, e.b, b, "claude", 500, 100, "0.004")
	e.clock.Advance(10 * time.Minute)
	return a.ID, b.ID
}

// claimLong claims a task of type typ for worker with a lease of a day:
// the reports of the tests span hours of the fake clock.
func claimLong(t testing.TB, b *backend.Backend, worker, typ string) cks.ClaimedTask {
	t.Helper()
	got, err := b.Tasks.Claim(context.Background(), ledger.ClaimParams{Worker: worker, Types: []string{typ}, N: 1, Lease: 24 * time.Hour})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim of a %s task: %d, %v", typ, len(got), err)
	}
	return got[0]
}

// spendRowOf returns the HTML of the row of name in the table by by.
func spendRowOf(t *testing.T, body, by, name string) string {
	t.Helper()
	i := strings.Index(body, `data-spend-by="`+by+`"`)
	if i < 0 {
		t.Fatalf("no table by %s in\n%s", by, body)
	}
	table := body[i : i+strings.Index(body[i:], "</table>")]
	j := strings.Index(table, `<tr data-spend-row="`+name+`">`)
	if j < 0 {
		t.Fatalf("no row %q in the table by %s:\n%s", name, by, table)
	}
	return table[j : j+strings.Index(table[j:], "</tr>")]
}

// cells is the numbers a spend row shows, in order: reports, input,
// output, tokens, cost.
func cells(reports, in, out, tokens int, cost string) []string {
	return []string{fmt.Sprintf(`data-label="Reports">%d</td>`, reports), fmt.Sprintf(`data-label="Input">%d</td>`, in),
		fmt.Sprintf(`data-label="Output">%d</td>`, out), fmt.Sprintf(`data-label="Tokens">%d</td>`, tokens),
		`data-label="Cost" data-cost>` + cost + `</td>`}
}

// TestSpendPage (issue 43): on both backends, the Spend page (linked from
// the navigation) sums the reports of the last 24 hours through get_usage:
// the window's total, charts of tokens and cost per hour stacked by model
// and by type (a bar per hour with reports, its value in its title), the
// totals by model, type and key (a report under each key of its task, a
// task without keys under none), and the costliest tasks linked to their
// pages; the 7-day window takes in the older report; the fragment is the
// live part alone; a window it does not offer is a 400 naming window.
func TestSpendPage(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{"page": func(t *testing.T, open backendtest.Opener) {
		e := newSpendEnv(t, open)
		llm, summarize := seedSpend(t, e)
		admin := e.token(t, cks.Grant{Resource: "/", Permission: auth.PermAdmin})
		code, page := e.call(t, admin, http.MethodGet, studio.SpendPath, "")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", studio.SpendPath, code, page)
		}
		mustContain(t, "the page", page, `<a href="/spend" aria-current="page">Spend</a>`, `id="live"`,
			`data-live-fragment="/studio/spend?window=24h" data-live-kind="spend" data-live-events="tasks"`,
			`href="/spend?window=24h" data-window="24h" aria-current="page">Last 24 hours</a>`,
			`<strong data-total-cost>0.0265 USD</strong> and <strong data-total-tokens>3100</strong> tokens (2500 in, 600 out) in <strong data-total-reports>3</strong> reports`,
			`<time datetime="2026-11-30T14:11:00Z" data-absolute>`,
			// The charts: each an SVG with its title, a bar per hour and series.
			`<title id="chart-tokens-model-title">Tokens per hour by model</title>`,
			`<title id="chart-cost-model-title">Cost per hour by model</title>`,
			`<title id="chart-tokens-type-title">Tokens per hour by type</title>`,
			`<title id="chart-cost-type-title">Cost per hour by type</title>`,
			`<title>gpt-5 2026-12-01 13:00 UTC: 1.5k tokens / h</title>`, `<title>gpt-5 2026-12-01 14:00 UTC: 1k tokens / h</title>`,
			`<title>claude 2026-12-01 14:00 UTC: 600 tokens / h</title>`, `<title>claude 2026-12-01 14:00 UTC: 0.004 USD / h</title>`,
			`<title>llm 2026-12-01 13:00 UTC: 0.013 USD / h</title>`, `gpt-5: 2.5k tokens / h in all, at most 1.5k in one slot.`,
			`</svg>gpt-5</li>`, `</svg>claude</li>`, `</svg>llm</li>`, `</svg>summarize</li>`)
		mustNotContain(t, "the page", page, "gpt-4", "archive", "no data in this window", "more groups than the page draws")
		if n := strings.Count(page, `<svg class="chart"`); n != 4 {
			t.Errorf("%d charts, want 4", n)
		}
		mustContain(t, "gpt-5's row", spendRowOf(t, page, "model", "gpt-5"), cells(2, 2000, 500, 2500, "0.0225")...)
		mustContain(t, "claude's row", spendRowOf(t, page, "model", "claude"), cells(1, 500, 100, 600, "0.004")...)
		mustContain(t, "llm's row", spendRowOf(t, page, "type", "llm"), cells(2, 2000, 500, 2500, "0.0225")...)
		mustContain(t, "summarize's row", spendRowOf(t, page, "type", "summarize"), cells(1, 500, 100, 600, "0.004")...)
		mustContain(t, "openai's row", spendRowOf(t, page, "key", "openai"), cells(2, 2000, 500, 2500, "0.0225")...)
		mustContain(t, "the row of no key", spendRowOf(t, page, "key", ""), `<span class="idle">none</span>`)
		mustContain(t, "the row of no key", spendRowOf(t, page, "key", ""), cells(1, 500, 100, 600, "0.004")...)
		if n := strings.Count(page, `<tr data-spend-total-row><th scope="row">all reports</th><td class="num" data-label="Reports">3</td>`); n != 3 {
			t.Errorf("%d tables end with the window's total, want 3", n)
		}
		top := page[strings.Index(page, "data-spend-top"):]
		first, second := strings.Index(top, fmt.Sprintf(`<tr data-top-task="%d">`, llm)), strings.Index(top, fmt.Sprintf(`<tr data-top-task="%d">`, summarize))
		if first < 0 || second < first {
			t.Errorf("the costliest tasks do not list %d then %d:\n%s", llm, summarize, top)
		}
		mustContain(t, "the costliest tasks", top, fmt.Sprintf(`<a class="task" href="/tasks/%d">#%d</a></td>
        <td data-label="Type"><code>llm</code></td>`, llm, llm))

		// The 7-day window sums the older report too, in buckets of 2 hours.
		_, week := e.call(t, admin, http.MethodGet, studio.SpendPath+"?window=7d", "")
		mustContain(t, "the week", week, `<strong data-total-cost>1.0265 USD</strong>`, `href="/spend?window=7d" data-window="7d" aria-current="page">`,
			`<title id="chart-cost-model-title">Cost per 2 hours by model</title>`, `<title>gpt-4 2026-11-30 12:00 UTC: 1 USD / 2 h</title>`,
			`data-live-fragment="/studio/spend?window=7d"`)
		mustContain(t, "gpt-4's row", spendRowOf(t, week, "model", "gpt-4"), cells(1, 100, 0, 100, "1")...)
		_, month := e.call(t, admin, http.MethodGet, studio.SpendPath+"?window=30d", "")
		mustContain(t, "the month", month, `<title id="chart-tokens-type-title">Tokens per 8 hours by type</title>`, `data-total-reports>4</strong>`)

		code, frag := e.call(t, admin, http.MethodGet, studio.SpendFragmentPath+"?window=24h", "")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", studio.SpendFragmentPath, code, frag)
		}
		mustNotContain(t, "the fragment", frag, "<html", "<h1>")
		mustContain(t, "the fragment", frag, `data-spend-window="24h"`, `<svg class="chart"`, `data-total-cost>0.0265 USD`)

		code, bad := e.call(t, admin, http.MethodGet, studio.SpendPath+"?window=2h", "")
		if code != http.StatusBadRequest || !strings.Contains(bad, "window") || !strings.Contains(bad, "24h, 7d or 30d") {
			t.Errorf("window=2h: %d, want a 400 naming the window\n%s", code, bad)
		}
	}})
}

// TestSpendPageEmpty: a window without reports draws its charts empty and
// says so; nothing is truncated.
func TestSpendPageEmpty(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{"empty": func(t *testing.T, open backendtest.Opener) {
		e := newSpendEnv(t, open)
		admin := e.token(t, cks.Grant{Resource: "/", Permission: auth.PermAdmin})
		code, page := e.call(t, admin, http.MethodGet, studio.SpendPath, "")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", studio.SpendPath, code, page)
		}
		mustContain(t, "an empty window", page, `data-total-cost>0 USD</strong>`, `data-no-usage`, "No usage reported in the last 24 hours.",
			"no data in this window", `</svg>no reports</li>`)
		if n := strings.Count(page, "no data in this window"); n != 4 {
			t.Errorf("%d empty charts, want 4", n)
		}
	}})
}

// TestSpendPageHonoursPermissions: on both backends, the Spend page
// needs what get_usage needs, read on /tasks: a reader of / sees it; a
// viewer who may read only the types gets the studio's 403 page naming
// read on /tasks, the page and its fragment alike.
func TestSpendPageHonoursPermissions(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{"permissions": func(t *testing.T, open backendtest.Opener) {
		e := newSpendEnv(t, open)
		seedSpend(t, e)
		reader := e.token(t, cks.Grant{Resource: "/", Permission: auth.PermRead})
		code, page := e.call(t, reader, http.MethodGet, studio.SpendPath, "")
		if code != http.StatusOK || !strings.Contains(page, `data-total-cost>0.0265 USD`) {
			t.Errorf("a reader's page: %d, want the sums\n%s", code, page)
		}
		typesOnly := e.token(t, cks.Grant{Resource: "/types", Permission: auth.PermRead})
		for _, path := range []string{studio.SpendPath, studio.SpendFragmentPath} {
			code, page = e.call(t, typesOnly, http.MethodGet, path, "")
			if code != http.StatusForbidden || !strings.Contains(page, "needs read on /tasks") || strings.Contains(page, "0.0265") {
				t.Errorf("GET %s by a viewer who may not read the tasks: %d, want the 403 page naming read on /tasks\n%s", path, code, page)
			}
		}
	}})
}

// TestTaskPageShowsSpend (issue 43): on both backends, a task page shows
// the task's spend against its budget — tokens of max_tokens and cost of
// max_cost, each with a bar of the share used — and each attempt's spend;
// the report that reaches the budget turns the page into a budget stop:
// the NEEDS_INPUT question at the top (once: not again as who moved it),
// the bar full, the budget named used up, and the edit form holding the
// budget to raise. A task with
// neither budget nor reports shows no spend.
func TestTaskPageShowsSpend(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{"spend": func(t *testing.T, open backendtest.Opener) {
		e := newSpendEnv(t, open)
		admin := e.token(t, cks.Grant{Resource: "/", Permission: auth.PermAdmin})
		page := func(id int64) string {
			t.Helper()
			code, body := e.call(t, admin, http.MethodGet, fmt.Sprintf("%s/%d", studio.TasksPath, id), "")
			if code != http.StatusOK {
				t.Fatalf("the page of task %d: %d\n%s", id, code, body)
			}
			return body
		}
		plain := backendtest.MustEnqueue(t, e.b, cks.NewTask{Type: "plain"})
		mustNotContain(t, "a task without spend", page(plain.ID), "data-task-spend", "data-attempt-spend", "data-budget-stop")

		backendtest.MustEnqueue(t, e.b, cks.NewTask{Type: "llm", MaxTokens: 1000, MaxCost: "0.50"})
		c := claimLong(t, e.b, "w1", "llm")
		reportUsage(t, e.b, c, "gpt-5", 300, 200, "0.0125")
		body := page(c.ID)
		mustContain(t, "a task under its budget", body,
			`<dd data-spend-tokens>500 of 1000 <meter min="0" max="100" low="80" high="99" optimum="0" value="50" title="50% of max_tokens">50%</meter> <span class="muted">(300 in, 200 out)</span></dd>`,
			`<dd data-spend-cost>0.0125 USD of 0.5 USD <meter min="0" max="100" low="80" high="99" optimum="0" value="2" title="2% of max_cost">2%</meter></dd>`,
			`<dd data-spend-reports>1</dd>`,
			`<p class="attempt-spend" data-attempt-spend><span class="label">Spent</span> 500 tokens (300 in, 200 out), 0.0125 USD in 1 report</p>`,
			`<input id="edit-max_tokens" name="max_tokens" type="number" value="1000" data-material="false"`,
			`<input id="edit-max_cost" name="max_cost" type="text" value="0.5" data-material="false"`)
		mustNotContain(t, "a task under its budget", body, "data-budget-stop", "data-spend-over")

		r := reportUsage(t, e.b, c, "gpt-5", 400, 100, "0.01")
		if r.BudgetExceeded == "" {
			t.Fatalf("the report reaching max_tokens: %+v, want the budget exceeded", r)
		}
		body = page(c.ID)
		mustContain(t, "a task its budget stopped", body,
			`<div class="notice notice--warn" role="alert" data-budget-stop><strong>Stopped by its budget.</strong> <span class="text">budget: spent 1000 tokens of the 1000 allowed (max_tokens). Raise the budget`,
			`<dd data-spend-tokens>1000 of 1000 <meter min="0" max="100" low="80" high="99" optimum="0" value="100"`,
			`<dd data-spend-over><strong>used up</strong>: spent 1000 tokens of the 1000 allowed (max_tokens)</dd>`,
			`<span class="label">Spent</span> 1000 tokens (700 in, 300 out), 0.0225 USD in 2 reports</p>`,
			`data-task-action="answer"`)
		mustNotContain(t, "a task its budget stopped", body, "data-moved") // the notice says it once
		if strings.Index(body, "data-budget-stop") > strings.Index(body, `id="actions-heading"`) {
			t.Error("the budget's question is not at the top of the page, above the actions")
		}
	}})
}
