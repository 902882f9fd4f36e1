package studio

import (
	"errors"
	"html/template"
	"net/http"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/ops"
	"github.com/cks-dev/cks/studio/chart"
)

// The charts page's routes.
const (
	// ChartsPath is the charts page: the task ledger's last hour
	// (task_stats) and the sweepers' recent passes (list_agents).
	ChartsPath = "/charts"
	// ChartsFragmentPath serves the charts alone; the page script swaps
	// them in on "tasks" and "sweepers" events (and its 10 s poll).
	ChartsFragmentPath = "/studio/charts"
)

// chartsView is the data of the "charts" block.
type chartsView struct {
	Charts []template.HTML
	// TasksFailed and SweepersFailed say a read failed (logged); the
	// block says so instead of those charts.
	TasksFailed, SweepersFailed bool
	// Sampled: the latencies are of the newest claims only.
	Sampled bool
	Until   string // RFC 3339, the time of the read
}

func (s *server) chartsPage(w http.ResponseWriter, r *http.Request) {
	v, status, err := s.charts(r)
	if s.forbidden(w, r, err) {
		return
	}
	s.render(w, r, status, pages["charts"], "layout", s.page("Charts", "charts", true, v))
}

func (s *server) chartsFragment(w http.ResponseWriter, r *http.Request) {
	v, status, err := s.charts(r)
	if s.forbidden(w, r, err) {
		return
	}
	w.Header().Set("X-Studio-Fragment", "charts")
	s.render(w, r, status, pages["charts"], "charts", v)
}

// charts reads task_stats (the last hour) and, when the hub has sweepers,
// list_agents, and draws them. Only a refusal is returned as an error.
func (s *server) charts(r *http.Request) (chartsView, int, error) {
	var v chartsView
	status := http.StatusOK
	st, err := ops.TaskStats.Do(r.Context(), s.ops, &cks.TaskStatsInput{})
	switch {
	case errors.Is(err, auth.ErrForbidden):
		return v, http.StatusForbidden, err
	case err != nil:
		s.logErr(r, "studio: task stats", err)
		v.TasksFailed, status = true, http.StatusInternalServerError
	default:
		v.Charts = append(v.Charts, taskCharts(st)...)
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
			v.Charts = append(v.Charts, sweeperChart(list.Sweepers, end.Add(-time.Hour), end).Figure())
		}
	}
	return v, status, nil
}

// taskCharts draws task_stats: tasks finished per minute, the queue depth
// by state, the claim latency.
func taskCharts(st cks.TaskStats) []template.HTML {
	end := st.Since.Add(time.Duration(len(st.Minutes)) * time.Minute)
	done := chart.Chart{ID: "chart-finished", Title: "Tasks finished per minute",
		Desc: "Tasks that reached COMPLETED or FAILED in each minute of the last hour.", Unit: "tasks / min",
		Kind: chart.StackedBars, Start: st.Since, End: end, Step: time.Minute,
		Series: []chart.Series{{Name: "completed"}, {Name: "failed"}}}
	depth := chart.Chart{ID: "chart-depth", Title: "Queue depth by state",
		Desc: "Unfinished tasks in each state at the end of each minute; states empty all hour are left out.", Unit: "tasks",
		Start: st.Since, End: end}
	lat := chart.Chart{ID: "chart-latency", Title: "Claim latency",
		Desc:  "Median and 95th percentile, per minute, of the wait from a task becoming OPEN to its claim.",
		Start: st.Since, End: end, Gap: time.Minute, Series: []chart.Series{{Name: "p50"}, {Name: "p95"}}}
	byState := map[cks.TaskState]*chart.Series{}
	var states []cks.TaskState
	var slowest float64
	for _, m := range st.Minutes {
		mid := m.At.Add(30 * time.Second) // a minute's value is drawn at its middle
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
			s.Points = append(s.Points, chart.Point{T: m.At.Add(time.Minute), V: float64(m.Depth[st0])})
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
func sweeperChart(sts []cks.SweeperStatus, start, end time.Time) chart.Chart {
	c := chart.Chart{ID: "chart-sweepers", Title: "Sweeper pass durations",
		Desc: "How long each sweeper's recent passes (its newest 30, whichever hub ran them) took, over the last hour.", Unit: "ms",
		Start: start, End: end}
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
