package studio

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/chart"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// The charts page's routes.
const (
	// ChartsPath is the charts page: the task ledger over a window
	// (?window=1h, 24h or 7d; task_stats) and the sweepers' recent passes
	// (list_agents).
	ChartsPath = "/charts"
	// ChartsFragmentPath serves the charts alone (with the page's
	// window); the page script morphs them in on "tasks" and "sweepers"
	// events (and its 10 s poll).
	ChartsFragmentPath = "/studio/charts"
)

// chartWindow is a window the charts page offers: its value in the URL,
// its length, and the step of task_stats over it (a chart of 60 to 96
// bars whatever the window).
type chartWindow struct {
	Value, Label string
	Span         time.Duration
	Step         time.Duration
	// Per names the step in a chart's title ("per minute"), Short in its
	// unit ("tasks / min").
	Per, Short string
}

// chartWindows are the windows of the charts page, the first the default.
var chartWindows = []chartWindow{
	{Value: "1h", Label: "1 hour", Span: time.Hour, Step: time.Minute, Per: "minute", Short: "min"},
	{Value: "24h", Label: "24 hours", Span: 24 * time.Hour, Step: 15 * time.Minute, Per: "15 minutes", Short: "15 min"},
	{Value: "7d", Label: "7 days", Span: 7 * 24 * time.Hour, Step: 2 * time.Hour, Per: "2 hours", Short: "2 h"},
}

// windowOf is the window r's query names (the default when none), or a
// FieldError naming window.
func windowOf(r *http.Request) (chartWindow, error) {
	return windowIn(r, chartWindows, func(w chartWindow) string { return w.Value }, "1h, 24h or 7d")
}

// windowIn is the window of ws (the first the default) that r's query
// names by its value, or a FieldError naming window that says expected.
func windowIn[W any](r *http.Request, ws []W, value func(W) string, expected string) (W, error) {
	v := r.URL.Query().Get("window")
	if v == "" {
		return ws[0], nil
	}
	for _, w := range ws {
		if value(w) == v {
			return w, nil
		}
	}
	var none W
	return none, &cks.FieldError{Field: "window", Expected: expected}
}

// chartsView is the data of the "charts" block.
type chartsView struct {
	Charts []template.HTML
	// TasksFailed and SweepersFailed say a read failed (logged); the
	// block says so instead of those charts.
	TasksFailed, SweepersFailed bool
	// Sampled: the latencies are of the newest claims only.
	Sampled bool
	Until   string // RFC 3339, the time of the read
	// Window is the window shown, Windows every one offered.
	Window  chartWindow
	Windows []chartWindow
}

func (s *server) chartsPage(w http.ResponseWriter, r *http.Request) {
	win, err := windowOf(r)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "Bad window", err.Error()+". Pick one of the windows on the Charts page.")
		return
	}
	v, status, err := s.charts(r, win)
	if s.forbidden(w, r, err) {
		return
	}
	s.render(w, r, status, pages["charts"], "layout", s.page("Charts", "charts", true, v))
}

func (s *server) chartsFragment(w http.ResponseWriter, r *http.Request) {
	win, err := windowOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	v, status, err := s.charts(r, win)
	if s.forbidden(w, r, err) {
		return
	}
	w.Header().Set("X-Studio-Fragment", "charts")
	s.render(w, r, status, pages["charts"], "charts", v)
}

// charts reads task_stats over win and, when the hub has sweepers,
// list_agents, and draws them. Only a refusal is returned as an error.
func (s *server) charts(r *http.Request, win chartWindow) (chartsView, int, error) {
	v := chartsView{Window: win, Windows: chartWindows}
	status := http.StatusOK
	st, err := ops.TaskStats.Do(r.Context(), s.ops, &cks.TaskStatsInput{Minutes: int(win.Span / time.Minute),
		StepMinutes: int(win.Step / time.Minute)})
	switch {
	case errors.Is(err, auth.ErrForbidden):
		return v, http.StatusForbidden, err
	case err != nil:
		s.logErr(r, "studio: task stats", err)
		v.TasksFailed, status = true, http.StatusInternalServerError
	default:
		v.Charts = append(v.Charts, taskCharts(st, win)...)
		v.Sampled = st.ClaimsSampled
		v.Until = st.Until.UTC().Format(time.RFC3339)
	}
	if s.ops.Sweepers != nil {
		list, err := ops.ListAgents.Do(r.Context(), s.ops, &struct{}{})
		switch {
		case errors.Is(err, auth.ErrForbidden):
			return v, http.StatusForbidden, err
		case err != nil:
			s.logErr(r, "studio: list sweepers", err)
			v.SweepersFailed, status = true, http.StatusInternalServerError
		default:
			end := s.clock.Now()
			v.Charts = append(v.Charts, sweeperChart(list.Sweepers, end.Add(-win.Span), end, win).Figure())
		}
	}
	return v, status, nil
}

// taskCharts draws task_stats over win: tasks finished per step, the queue
// depth by state, the claim latency.
func taskCharts(st cks.TaskStats, win chartWindow) []template.HTML {
	step := time.Duration(max(st.StepMinutes, 1)) * time.Minute // win.Step, as asked
	end := st.Since.Add(time.Duration(len(st.Minutes)) * step)
	done := chart.Chart{ID: "chart-finished", Title: "Tasks finished per " + win.Per,
		Desc: fmt.Sprintf("Tasks that reached COMPLETED or FAILED in each %s of the last %s.", win.Per, win.Label), Unit: "tasks / " + win.Short,
		Kind: chart.StackedBars, Start: st.Since, End: end, Step: step,
		Series: []chart.Series{{Name: "completed"}, {Name: "failed"}}}
	depth := chart.Chart{ID: "chart-depth", Title: "Queue depth by state",
		Desc: fmt.Sprintf("Unfinished tasks in each state at the end of each %s; states empty all the last %s are left out.", win.Per, win.Label),
		Unit: "tasks", Start: st.Since, End: end}
	lat := chart.Chart{ID: "chart-latency", Title: "Claim latency",
		Desc:  fmt.Sprintf("Median and 95th percentile, per %s, of the wait from a task becoming OPEN to its claim.", win.Per),
		Start: st.Since, End: end, Gap: step, Series: []chart.Series{{Name: "p50"}, {Name: "p95"}}}
	byState := map[cks.TaskState]*chart.Series{}
	var states []cks.TaskState
	var slowest float64
	for _, m := range st.Minutes {
		mid := m.At.Add(step / 2) // a step's value is drawn at its middle
		if m.Completed > 0 {
			done.Series[0].Points = append(done.Series[0].Points, chart.Point{T: m.At, V: float64(m.Completed)})
		}
		if m.Failed > 0 {
			done.Series[1].Points = append(done.Series[1].Points, chart.Point{T: m.At, V: float64(m.Failed)})
		}
		for st, n := range m.Depth {
			if n > 0 && byState[st] == nil {
				byState[st] = &chart.Series{Name: string(st)}
				states = append(states, st)
			}
		}
		if m.ClaimLatencyP50MS != nil && m.ClaimLatencyP95MS != nil {
			lat.Series[0].Points = append(lat.Series[0].Points, chart.Point{T: mid, V: *m.ClaimLatencyP50MS})
			lat.Series[1].Points = append(lat.Series[1].Points, chart.Point{T: mid, V: *m.ClaimLatencyP95MS})
			slowest = max(slowest, *m.ClaimLatencyP95MS)
		}
	}
	// The states in lifecycle order, each with a point every minute.
	slices.SortFunc(states, func(a, b cks.TaskState) int {
		return slices.Index(ledger.Unfinished, a) - slices.Index(ledger.Unfinished, b)
	})
	for _, st0 := range states {
		s := byState[st0]
		for _, m := range st.Minutes {
			s.Points = append(s.Points, chart.Point{T: m.At.Add(step), V: float64(m.Depth[st0])})
		}
		depth.Series = append(depth.Series, *s)
	}
	if len(depth.Series) == 0 {
		depth.Series = []chart.Series{{Name: "no unfinished tasks"}}
	}
	lat.Unit = "ms"
	if slowest >= 10000 { // seconds read better than tens of thousands of ms
		lat.Unit = "s"
		for i := range lat.Series {
			for j := range lat.Series[i].Points {
				lat.Series[i].Points[j].V /= 1000
			}
		}
	}
	return []template.HTML{done.Figure(), depth.Figure(), lat.Figure()}
}

// sweeperChart draws each sweeper's recorded recent passes in [start, end] by
// their duration; a sweeper with none in the window is left out.
func sweeperChart(sts []cks.SweeperStatus, start, end time.Time, win chartWindow) chart.Chart {
	c := chart.Chart{ID: "chart-sweepers", Title: "Sweeper pass durations",
		Desc: fmt.Sprintf("How long each sweeper's recent passes (its newest 30, whichever hub ran them) took, over the last %s.", win.Label),
		Unit: "ms", Start: start, End: end}
	for _, st := range sts {
		s := chart.Series{Name: st.AgentID}
		for _, p := range slices.Backward(st.RecentPasses) { // oldest first
			if !p.At.Before(start) && !p.At.After(end) {
				s.Points = append(s.Points, chart.Point{T: p.At, V: p.DurationMS})
			}
		}
		if len(s.Points) > 0 {
			c.Series = append(c.Series, s)
		}
	}
	if len(c.Series) == 0 {
		c.Series = []chart.Series{{Name: "no passes yet"}}
	}
	return c
}
