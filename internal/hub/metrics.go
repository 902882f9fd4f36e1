package hub

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cks-dev/cks/internal/ops"
)

// unclaimedCollector exports list_unclaimed_types on /metrics: a task type
// whose tasks wait with no worker to claim them is the queue's silent
// failure (issue 39), so an alert can fire on it.
type unclaimedCollector struct {
	svc          *ops.Services
	types, tasks *prometheus.Desc
}

func newUnclaimedCollector(svc *ops.Services) *unclaimedCollector {
	return &unclaimedCollector{svc: svc,
		types: prometheus.NewDesc("cks_task_types_unclaimed",
			"Task types with OPEN tasks due for over a minute that no worker claims (none held, no live process naming the type).", nil, nil),
		tasks: prometheus.NewDesc("cks_tasks_unclaimed",
			"The due OPEN tasks of each unclaimed task type (at most 100 types, the longest-waiting).", []string{"type"}, nil),
	}
}

func (c *unclaimedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.types; ch <- c.tasks }

func (c *unclaimedCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u, err := ops.UnclaimedTypes(ctx, c.svc, 0)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.types, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.types, prometheus.GaugeValue, float64(u.Total))
	for _, t := range u.Types {
		ch <- prometheus.MustNewConstMetric(c.tasks, prometheus.GaugeValue, float64(t.Waiting), t.Type)
	}
}

// claimsWaiting exports how many claims the ledger holds for work (the
// long poll, claim_tasks' wait_s): the idle agents waiting on this hub.
func claimsWaiting(tasks interface{ ClaimsWaiting() int }) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cks_claims_waiting",
		Help: "The claim_tasks calls held for work now (wait_s: the long poll of idle agents)."},
		func() float64 { return float64(tasks.ClaimsWaiting()) })
}
