package api

import (
	"context"
	"net/http"
	"time"

	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/sweeper"
	"github.com/prometheus/client_golang/prometheus"
)

// routeSweepers registers the sweeper endpoints: list and status need read,
// start and stop need control on the sweeper.
func (a *API) routeSweepers() {
	h := func(pattern, perm, res string, f http.HandlerFunc) { a.route(pattern, perm, res, f) }
	h("GET /v1/sweepers", auth.PermRead, auth.ResourceSweepers, a.listSweepers)
	h("GET /v1/sweepers/{id}", auth.PermRead, "/sweepers/{id}", a.sweeperStatus)
	h("POST /v1/sweepers/{id}/start", auth.PermControl, "/sweepers/{id}", a.startSweeper)
	h("POST /v1/sweepers/{id}/stop", auth.PermControl, "/sweepers/{id}", a.stopSweeper)
}

// SweeperList is the body of GET /v1/sweepers.
type SweeperList struct {
	Sweepers []sweeper.Status `json:"sweepers"`
}

func (a *API) listSweepers(w http.ResponseWriter, r *http.Request) {
	sts, err := a.cfg.Sweepers.List(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if sts == nil {
		sts = []sweeper.Status{}
	}
	writeJSON(w, http.StatusOK, SweeperList{Sweepers: sts})
}

func (a *API) sweeperStatus(w http.ResponseWriter, r *http.Request) {
	a.sweeperCall(w, r, a.cfg.Sweepers.Status)
}

func (a *API) startSweeper(w http.ResponseWriter, r *http.Request) {
	a.sweeperCall(w, r, a.cfg.Sweepers.Start)
}

func (a *API) stopSweeper(w http.ResponseWriter, r *http.Request) {
	a.sweeperCall(w, r, a.cfg.Sweepers.Stop)
}

func (a *API) sweeperCall(w http.ResponseWriter, r *http.Request, f func(context.Context, string) (sweeper.Status, error)) {
	st, err := f(r.Context(), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// sweeperCollector exports sweeper status at scrape time.
type sweeperCollector struct {
	reg *sweeper.Registry
}

var (
	sweeperRunningDesc = prometheus.NewDesc("cks_sweeper_running", "1 when the sweeper's loop runs in this process.",
		[]string{"agent_id"}, nil)
	sweeperRunsDesc = prometheus.NewDesc("cks_sweeper_runs_total", "Sweeper passes completed by this process.",
		[]string{"agent_id"}, nil)
	sweeperResultDesc = prometheus.NewDesc("cks_sweeper_last_result_count",
		"What the sweeper's last pass counted (e.g. leases reclaimed, tasks stopped too long).",
		[]string{"agent_id"}, nil)
	sweeperLastRunDesc = prometheus.NewDesc("cks_sweeper_last_run_timestamp_seconds",
		"When the sweeper's last pass started.", []string{"agent_id"}, nil)
)

func (c sweeperCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sweeperRunningDesc
	ch <- sweeperRunsDesc
	ch <- sweeperResultDesc
	ch <- sweeperLastRunDesc
}

func (c sweeperCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.reg.List() {
		running := 0.0
		if st.Running {
			running = 1
		}
		ch <- prometheus.MustNewConstMetric(sweeperRunningDesc, prometheus.GaugeValue, running, st.AgentID)
		ch <- prometheus.MustNewConstMetric(sweeperRunsDesc, prometheus.CounterValue, float64(st.RunCount), st.AgentID)
		if st.LastResultCount != nil {
			ch <- prometheus.MustNewConstMetric(sweeperResultDesc, prometheus.GaugeValue, float64(*st.LastResultCount), st.AgentID)
		}
		if st.LastRunAt != nil {
			ch <- prometheus.MustNewConstMetric(sweeperLastRunDesc, prometheus.GaugeValue,
				float64(st.LastRunAt.UnixNano())/float64(time.Second), st.AgentID)
		}
	}
}
