package api

import (
	"time"

	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/prometheus/client_golang/prometheus"
)

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
