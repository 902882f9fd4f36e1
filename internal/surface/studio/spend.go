package studio

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/chart"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
)

// The Spend page's routes (issue 43; docs/spend.md#in-the-studio).
const (
	// SpendPath is the Spend page: what agents reported spending over a
	// window (?window=24h, 7d or 30d), per time bucket by model and by
	// task type, the window's totals by model, type and key, and the
	// costliest tasks — every number a sum of get_usage.
	SpendPath = "/spend"
	// SpendFragmentPath serves the page's live part alone (with its
	// window); the page script morphs it in on "tasks" events and its
	// 10 s poll (a report publishes no event of its own).
	SpendFragmentPath = "/studio/spend"
)

// SpendTopTasks is how many of the window's costliest tasks the Spend
// page lists.
const SpendTopTasks = 10

// spendWindow is a window the Spend page offers: its value in the URL
// (get_usage's since), its label, and the bucket of its charts (every: a
// chart of 24 to 90 bars whatever the window).
type spendWindow struct {
	Value, Label string
	Step         time.Duration
	// Per names the bucket in a chart's title ("hour"), Short in its
	// unit ("tokens / h").
	Per, Short string
}

// spendWindows are the windows of the Spend page, the first the default.
var spendWindows = []spendWindow{
	{Value: "24h", Label: "24 hours", Step: time.Hour, Per: "hour", Short: "h"},
	{Value: "7d", Label: "7 days", Step: 2 * time.Hour, Per: "2 hours", Short: "2 h"},
	{Value: "30d", Label: "30 days", Step: 8 * time.Hour, Per: "8 hours", Short: "8 h"},
}

// spendWindowOf is the window r's query names (the default when none), or
// a FieldError naming window.
func spendWindowOf(r *http.Request) (spendWindow, error) {
	return windowIn(r, spendWindows, func(w spendWindow) string { return w.Value }, "24h, 7d or 30d")
}

// spendView is the data of the "spend" block.
type spendView struct {
	Window  spendWindow
	Windows []spendWindow
	// Failed says a read failed (logged): the block says so instead.
	Failed bool
	// Since and Until are the window read (RFC 3339 and as shown).
	Since, Until timeField
	Total        spendRow
	Charts       []template.HTML
	// ByModel, ByType and ByKey are the window's sums by each; Top the
	// costliest tasks.
	ByModel, ByType, ByKey []spendRow
	Top                    []spendRow
	// Truncated: a read had more groups than it returned (the charts or
	// a table leave the cheapest out).
	Truncated bool
}

// spendRow is one sum of get_usage, formatted: Name its group's value
// ("" for none), TaskID and Type its task's (the top tasks).
type spendRow struct {
	Name   string
	TaskID int64
	Type   string
	cks.UsageSum
}

func (s *server) spendPage(w http.ResponseWriter, r *http.Request) {
	win, err := spendWindowOf(r)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "Bad window", err.Error()+". Pick one of the windows on the Spend page.")
		return
	}
	v, status, err := s.spend(r, win)
	if s.forbidden(w, r, err) {
		return
	}
	s.render(w, r, status, pages["spend"], "layout", s.page("Spend", "spend", true, v))
}

func (s *server) spendFragment(w http.ResponseWriter, r *http.Request) {
	win, err := spendWindowOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	v, status, err := s.spend(r, win)
	if s.forbidden(w, r, err) {
		return
	}
	w.Header().Set("X-Studio-Fragment", "spend")
	s.render(w, r, status, pages["spend"], "spend", v)
}

// spend reads the window's sums through get_usage (the one rule of them):
// per bucket by model and by type for the charts, the totals by model,
// type and key, and the costliest tasks. Only a refusal is returned as an
// error; any other failure is the view's Failed.
func (s *server) spend(r *http.Request, win spendWindow) (spendView, int, error) {
	v := spendView{Window: win, Windows: spendWindows}
	every := cks.Duration(cks.FormatDuration(win.Step))
	type query struct {
		in   cks.GetUsageInput
		into func(cks.UsageSummary)
	}
	now := s.clock.Now()
	queries := []query{
		{cks.GetUsageInput{By: cks.Names{"model"}, Limit: cks.MaxUsageRows}, func(u cks.UsageSummary) {
			v.Since, v.Until = at(now, u.Since), at(now, u.Until)
			v.Total = spendRow{UsageSum: u.Total}
			v.ByModel = spendRows(u, "model")
		}},
		{cks.GetUsageInput{By: cks.Names{"type"}, Limit: cks.MaxUsageRows}, func(u cks.UsageSummary) { v.ByType = spendRows(u, "type") }},
		{cks.GetUsageInput{By: cks.Names{"key"}, Limit: cks.MaxUsageRows}, func(u cks.UsageSummary) { v.ByKey = spendRows(u, "key") }},
		{cks.GetUsageInput{By: cks.Names{"model"}, Every: every, Limit: cks.MaxUsageRows}, func(u cks.UsageSummary) {
			v.Charts = append(v.Charts, spendCharts(u, win, "model", v.ByModel)...)
		}},
		{cks.GetUsageInput{By: cks.Names{"type"}, Every: every, Limit: cks.MaxUsageRows}, func(u cks.UsageSummary) {
			v.Charts = append(v.Charts, spendCharts(u, win, "type", v.ByType)...)
		}},
		{cks.GetUsageInput{By: cks.Names{"task", "type"}, Limit: SpendTopTasks}, func(u cks.UsageSummary) {
			for _, row := range spendRows(u, "type") {
				row.TaskID, _ = strconv.ParseInt(row.Group["task"], 10, 64)
				row.Type, row.Name = row.Name, ""
				v.Top = append(v.Top, row)
			}
		}},
	}
	for _, q := range queries {
		q.in.Since = cks.Duration(win.Value)
		u, err := ops.GetUsage.Do(r.Context(), s.ops, &q.in)
		switch {
		case errors.Is(err, auth.ErrForbidden):
			return v, http.StatusForbidden, err
		case err != nil:
			s.logErr(r, "studio: get usage", err, "by", q.in.By, "window", win.Value)
			return spendView{Window: win, Windows: spendWindows, Failed: true}, http.StatusInternalServerError, nil
		}
		// The top tasks are a limit by design; any other read cut short
		// leaves groups out of a chart or a table.
		v.Truncated = v.Truncated || (u.Truncated > 0 && q.in.Limit != SpendTopTasks)
		q.into(u)
	}
	return v, http.StatusOK, nil
}

// spendRows are u's rows named by their value of dimension by.
func spendRows(u cks.UsageSummary, by string) []spendRow {
	out := make([]spendRow, 0, len(u.Rows))
	for _, row := range u.Rows {
		out = append(out, spendRow{Name: row.Group[by], UsageSum: row})
	}
	return out
}

// spendCharts draws u (get_usage by one dimension and by win's bucket) as
// two charts of stacked bars: tokens per bucket and cost per bucket, a
// layer per value of by, in the order of totals (the window's sums by it,
// costliest first: at the bottom of each stack).
func spendCharts(u cks.UsageSummary, win spendWindow, by string, totals []spendRow) []template.HTML {
	start, end := u.Since.Truncate(win.Step), u.Until.Truncate(win.Step).Add(win.Step)
	tokens := chart.Chart{ID: "chart-tokens-" + by, Title: "Tokens per " + win.Per + " by " + by,
		Desc: fmt.Sprintf("Input and output tokens reported in each %s of the last %s, stacked by %s.", win.Per, win.Label, by),
		Unit: "tokens / " + win.Short, Kind: chart.StackedBars, Start: start, End: end, Step: win.Step}
	cost := chart.Chart{ID: "chart-cost-" + by, Title: "Cost per " + win.Per + " by " + by,
		Desc: fmt.Sprintf("What the reports of each %s of the last %s cost, in USD, stacked by %s.", win.Per, win.Label, by),
		Unit: "USD / " + win.Short, Kind: chart.StackedBars, Start: start, End: end, Step: win.Step}
	series := map[string]int{}
	layer := func(name string) int {
		i, ok := series[name]
		if !ok {
			i = len(tokens.Series)
			series[name] = i
			tokens.Series = append(tokens.Series, chart.Series{Name: name})
			cost.Series = append(cost.Series, chart.Series{Name: name})
		}
		return i
	}
	for _, row := range totals {
		layer(groupName(row.Name))
	}
	for _, row := range u.Rows {
		i := layer(groupName(row.Group[by]))
		tokens.Series[i].Points = append(tokens.Series[i].Points, chart.Point{T: row.Start, V: float64(row.Tokens)})
		cost.Series[i].Points = append(cost.Series[i].Points, chart.Point{T: row.Start, V: costFloat(row.Cost)})
	}
	if len(tokens.Series) == 0 {
		tokens.Series = []chart.Series{{Name: "no reports"}}
		cost.Series = []chart.Series{{Name: "no reports"}}
	}
	return []template.HTML{tokens.Figure(), cost.Figure()}
}

// costFloat is c in units, for a chart's bar only: the page's numbers are
// the exact decimal (cks.Cost.String).
func costFloat(c cks.Cost) float64 { return float64(c) / 1e9 }

// groupName is how the page names a group's value: "" (a report without
// a model, a task without keys) reads "none".
func groupName(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

// spendTableArgs is the argument of spend.html's "spend-table" block: the
// sums by one dimension and the window's total.
type spendTableArgs struct {
	By, Label, Heading string
	Rows               []spendRow
	Total              spendRow
}

func spendTableOf(by, label, heading string, rows []spendRow, total spendRow) spendTableArgs {
	return spendTableArgs{By: by, Label: label, Heading: heading, Rows: rows, Total: total}
}
