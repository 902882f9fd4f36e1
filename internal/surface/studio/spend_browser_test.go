package studio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/waitfor"
)

// seedUsage makes, through a real exec agent and the API, what the Spend
// page shows: the agent's command reports two calls of gpt-5 (3000 tokens
// of the task's budget of 100000, 0.0225 USD) through its reports pipe,
// and a summarize task's holder reports one of claude over the API. It
// returns the llm task's id once get_usage counts the three reports.
func seedUsage(t testing.TB, h consoleHub) int64 {
	t.Helper()
	code, out := h.api(t, http.MethodPost, "/v1/tasks", `{"type":"llm","title":"Summarize the incident","concurrency_keys":["openai:gpt-5"],"max_tokens":100000,"max_cost":"5"}`)
	var llm cks.CreatedTask
	if err := json.Unmarshal([]byte(out), &llm); code != http.StatusCreated || err != nil || llm.Task.ID == 0 {
		t.Fatalf("create_task: %d %s %v", code, out, err)
	}
	runExecAgent(t, h, "llm", "sh", "-c", `printf '%s\n' `+
		`'{"usage":{"model":"gpt-5","input_tokens":1200,"output_tokens":300,"cost":"0.0125"}}' `+
		`'{"usage":{"model":"gpt-5","input_tokens":800,"output_tokens":200,"cost":"0.01"}}' >&"$CKS_REPORT_FD"`)
	if code, out := h.api(t, http.MethodPost, "/v1/tasks", `{"type":"summarize","title":"Digest"}`); code != http.StatusCreated {
		t.Fatalf("create_task: %d %s", code, out)
	}
	sum := h.claimOne(t, "summarize")
	h.reportUsage(t, sum, `{"model":"claude","input_tokens":500,"output_tokens":100,"cost":"0.004"}`)
	waitfor.Until(t, "get_usage to count the three reports", func() bool {
		code, out := h.api(t, http.MethodGet, "/v1/usage", "")
		var u cks.UsageSummary
		return code == http.StatusOK && json.Unmarshal([]byte(out), &u) == nil && u.Total.Reports == 3
	})
	return llm.Task.ID
}

// reportUsage reports a call of the attempt c holds over the API
// (report_usage; body is the call's fields).
func (h consoleHub) reportUsage(t testing.TB, c cks.ClaimedTask, body string) {
	t.Helper()
	body = fmt.Sprintf(`{"lease_token":%q,%s`, c.LeaseToken, strings.TrimPrefix(body, "{"))
	if code, out := h.api(t, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/usage", c.ID), body); code != http.StatusCreated {
		t.Fatalf("report_usage: %d %s", code, out)
	}
}

// TestBrowserSpend (issue 43): on both backends, the Spend page, reached
// from the navigation, shows what a real exec agent and an API caller
// reported: the window's total, four charts with bars and legends, the
// tables by model, type and key; a report made after it loaded appears
// without a reload (its poll; a report publishes no event); the costliest
// task's link opens its page, which shows its spend against its budget.
func TestBrowserSpend(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		llm := seedUsage(t, h)
		tb := newTab(t, 0)
		tb.onEveryPage(`window.cksPollMs = 300`)
		tb.signIn(h, h.Token)
		tb.do(click(chromedp.CSS(`nav a[href="/spend"]`)), waitVisible(chromedp.CSS(`#chart-tokens-model svg`)))
		js[bool](tb, `window.cksNoReload = true`)
		checkPageBasics(t, tb, "/spend")
		if got := tb.text(`[data-total-cost]`); got != "0.0265 USD" {
			t.Errorf("the total cost reads %q, want 0.0265 USD", got)
		}
		for _, id := range []string{"chart-tokens-model", "chart-cost-model", "chart-tokens-type", "chart-cost-type"} {
			bars := js[int](tb, fmt.Sprintf(`(() => { const svg = document.querySelector('#%s svg'); const r = svg.getBoundingClientRect();
				return r.width > 100 && r.height > 50 ? svg.querySelectorAll('rect > title').length : -1; })()`, id))
			if bars < 1 {
				t.Errorf("chart %s: %d bars (-1: not visible), want some", id, bars)
			}
		}
		if got := tb.text(`#chart-tokens-model .chart-legend`); !strings.Contains(got, "gpt-5") || !strings.Contains(got, "claude") {
			t.Errorf("the tokens chart's legend reads %q, want gpt-5 and claude", got)
		}
		for sel, want := range map[string][]string{
			`[data-spend-by="model"] [data-spend-row="gpt-5"]`:      {"2000", "500", "2500", "0.0225"},
			`[data-spend-by="model"] [data-spend-row="claude"]`:     {"600", "0.004"},
			`[data-spend-by="type"] [data-spend-row="summarize"]`:   {"600", "0.004"},
			`[data-spend-by="key"] [data-spend-row="openai:gpt-5"]`: {"2500", "0.0225"},
		} {
			tb.do(waitVisible(chromedp.CSS(sel)))
			got := tb.text(sel)
			for _, w := range want {
				if !strings.Contains(got, w) {
					t.Errorf("%s reads %q, want %s in it", sel, got, w)
				}
			}
		}

		// A report made now appears without a reload.
		if code, out := h.api(t, http.MethodPost, "/v1/tasks", `{"type":"summarize","title":"Digest again"}`); code != http.StatusCreated {
			t.Fatalf("create_task: %d %s", code, out)
		}
		h.reportUsage(t, h.claimOne(t, "summarize"), `{"model":"claude","input_tokens":100,"cost":"0.001"}`)
		tb.waitTrue("the new report in the total", `document.querySelector('[data-total-cost]').textContent === "0.0275 USD"`)
		if !js[bool](tb, `window.cksNoReload === true`) {
			t.Error("the page reloaded; it should follow the reports live")
		}

		// The costliest task's link: its page shows its spend and budget.
		tb.do(click(chromedp.CSS(fmt.Sprintf(`[data-spend-top] a[href="/tasks/%d"]`, llm))), waitVisible(chromedp.CSS(`[data-task-spend]`)))
		if got := tb.text(`[data-spend-tokens]`); !strings.HasPrefix(got, "2500 of 100000") {
			t.Errorf("the task's tokens read %q, want 2500 of 100000", got)
		}
		if got := tb.text(`[data-spend-cost]`); !strings.HasPrefix(got, "0.0225 USD of 5 USD") {
			t.Errorf("the task's cost reads %q, want 0.0225 USD of 5 USD", got)
		}
		if n := js[int](tb, `document.querySelectorAll('[data-attempt-spend]').length`); n != 1 {
			t.Errorf("%d attempts show a spend, want 1", n)
		}
	})
}

// seedSpendHistory reports a day of usage on h's database for the Spend
// page's screenshot: three task types, two tasks each (one for each half
// of the day), each reporting calls of its model every hour in amounts
// that vary from hour to hour. It writes through a second handle whose
// clock starts 23 hours ago, so the reports fall in the hours they name
// (a SQLite hub's database takes its writer's times).
func seedSpendHistory(t testing.TB, h consoleHub) {
	t.Helper()
	c := clock.NewFake(time.Now().Add(-23 * time.Hour).Truncate(time.Hour))
	b, err := backend.Open(context.Background(), h.Database, driver.WithClock(c))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	kinds := []struct {
		typ, model, key string
		tokens          int64
		cost            int64 // billionths of a USD per 1000 tokens
	}{
		{"research", "claude-sonnet-4", "llm:anthropic", 42000, 9_000_000},
		{"summarize", "gpt-5", "llm:openai", 26000, 6_000_000},
		{"triage", "gpt-5-mini", "llm:openai-mini", 15000, 900_000},
	}
	held := map[string]cks.ClaimedTask{}
	for hour := range 24 {
		for i, k := range kinds {
			if hour%12 == 0 {
				backendtest.MustEnqueue(t, b, cks.NewTask{Type: k.typ, Title: fmt.Sprintf("%s batch %d", k.typ, hour/12+1),
					ConcurrencyKeys: []string{k.key}, MaxTokens: 2_000_000, MaxCost: "20"})
				held[k.typ] = claimLong(t, b, "seed-"+k.typ, k.typ)
			}
			// A day's shape: busy in the afternoon, quiet at night, each type its own.
			n := k.tokens * int64(3+(hour*7+i*5)%11) / 8
			in := n * 4 / 5
			reportUsage(t, b, held[k.typ], k.model, in, n-in, cks.Cost(n*k.cost/1000).String())
		}
		c.Advance(time.Hour)
	}
}
