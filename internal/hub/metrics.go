package hub

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/ledger"
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

// taskCounts exports the ledger's count of tasks by state and type
// (ledger.TaskCounts): from its cache, so a scrape within
// ledger.CountsTTL of the last read (longer when reads take long) reads
// nothing of the database. Every
// state of each type the counts name is exported, 0 included, and the
// tasks of the other types as type="other": at most
// (ledger.MaxCountedTypes+1) × 12 series.
type taskCounts struct {
	tasks *ledger.Service
	desc  *prometheus.Desc
}

func newTaskCounts(tasks *ledger.Service) *taskCounts {
	return &taskCounts{tasks: tasks, desc: prometheus.NewDesc("cks_tasks",
		fmt.Sprintf("The tasks in each state, by task type: the ledger's count, read at most every %s, or %d times as long as a read takes "+
			"(the same on every hub of a database: "+
			"take one hub's, not the sum). At most %d types are named (those with the most due OPEN tasks, then those running, then those named before); "+
			`the tasks of the others are type="%s".`, ledger.CountsTTL, ledger.CountsCostFactor, ledger.MaxCountedTypes, ledger.OtherType),
		[]string{"state", "type"}, nil)}
}

func (c *taskCounts) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *taskCounts) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	counts, err := c.tasks.TaskCounts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	other := maps.Clone(counts.ByState)
	for typ, byState := range counts.ByType {
		for st, n := range byState {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), string(st), typ)
			other[st] -= n
		}
	}
	for st, n := range other {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(max(n, 0)), string(st), ledger.OtherType)
	}
}

// taskBuckets are the bounds (seconds) of the task histograms: 5 ms to
// about 6 h, each 4 times the last.
var taskBuckets = prometheus.ExponentialBuckets(0.005, 4, 12)

// taskMetrics is the hub's ledger.Observer: what this hub's own claims
// and attempt ends were (each hub exports its own; sum them across hubs).
// Its type label names the first ledger.MaxCountedTypes types this hub saw
// and "other" for the rest, so each of its metrics has at most
// ledger.MaxCountedTypes+1 values of it.
type taskMetrics struct {
	mu    sync.Mutex
	types map[string]bool
	// models and keys are the model and key labels named so far (usage,
	// bounded as types are).
	models, keys map[string]bool

	claims *prometheus.CounterVec
	wait   *prometheus.HistogramVec
	took   *prometheus.HistogramVec
	ends   *prometheus.CounterVec

	tokens, cost, reports, keyTokens, keyCost *prometheus.CounterVec
}

func newTaskMetrics() *taskMetrics {
	const perHub = " Each hub counts what it itself did: sum across hubs."
	bound := fmt.Sprintf(` At most %d types are named (the first this hub saw), the others are type="%s".`, ledger.MaxCountedTypes, ledger.OtherType)
	usageBound := fmt.Sprintf(` At most %d models and %d keys are named (the first this hub saw), the others are "%s"; a report of a task without keys has key="".`,
		ledger.MaxCountedTypes, ledger.MaxCountedTypes, ledger.OtherType)
	return &taskMetrics{types: map[string]bool{}, models: map[string]bool{}, keys: map[string]bool{},
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cks_usage_tokens_total",
			Help: "Tokens agents reported (report_usage), by model and direction (input, output)." + perHub + usageBound},
			[]string{"model", "direction"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cks_usage_cost_usd_total",
			Help: "Cost in USD agents reported (report_usage), by model." + perHub + usageBound}, []string{"model"}),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cks_usage_reports_total",
			Help: "Usage reports (report_usage calls), by model." + perHub + usageBound}, []string{"model"}),
		keyTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cks_usage_key_tokens_total",
			Help: "Tokens agents reported, by concurrency key: a report counts under each key of its task (do not sum across keys)." +
				perHub + usageBound}, []string{"key"}),
		keyCost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cks_usage_key_cost_usd_total",
			Help: "Cost in USD agents reported, by concurrency key: a report counts under each key of its task (do not sum across keys)." +
				perHub + usageBound}, []string{"key"}),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cks_task_claims_total",
			Help: "Tasks claimed (leased to an executor), by task type." + perHub + bound}, []string{"type"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "cks_task_claim_wait_seconds",
			Help: "Enqueue to claim: how long a task waited from its enqueue to its first claim (a delayed task's delay included), by task type." +
				perHub + bound, Buckets: taskBuckets}, []string{"type"}),
		took: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "cks_task_attempt_duration_seconds",
			Help:    "Attempt duration: from an attempt's claim to its end (whatever the outcome), by task type." + perHub + bound,
			Buckets: taskBuckets}, []string{"type"}),
		ends: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cks_task_attempts_ended_total",
			Help: "Attempts ended, by task type and outcome (completed, needs_review, needs_input, failed, retried, timed_out, reclaimed, " +
				"given_back, cancelled, stopped, requeued)." + perHub + bound}, []string{"type", "outcome"}),
	}
}

// label is typ as the type label: itself while fewer than
// ledger.MaxCountedTypes types are named, or when it is one of them; else
// "other".
func (m *taskMetrics) label(typ string) string { return bounded(m.types, typ) }

// Claimed implements ledger.Observer.
func (m *taskMetrics) Claimed(claims []ledger.Claim) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range claims {
		typ := m.label(c.Type)
		m.claims.WithLabelValues(typ).Inc()
		if c.First {
			m.wait.WithLabelValues(typ).Observe(c.Wait.Seconds())
		}
	}
}

// AttemptsEnded implements ledger.Observer.
func (m *taskMetrics) AttemptsEnded(ends []ledger.AttemptEnd) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range ends {
		typ := m.label(e.Type)
		m.took.WithLabelValues(typ).Observe(e.Took.Seconds())
		m.ends.WithLabelValues(typ, string(e.Outcome)).Inc()
	}
}

// bounded is v as a label of set: itself while fewer than
// ledger.MaxCountedTypes values are named, or when it is one of them; else
// ledger.OtherType.
func bounded(set map[string]bool, v string) string {
	if set[v] {
		return v
	}
	if len(set) < ledger.MaxCountedTypes {
		set[v] = true
		return v
	}
	return ledger.OtherType
}

// UsageReported implements ledger.Observer.
func (m *taskMetrics) UsageReported(u cks.Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	model := bounded(m.models, u.Model)
	m.reports.WithLabelValues(model).Inc()
	keys := u.ConcurrencyKeys
	if len(keys) == 0 {
		keys = []string{""}
	}
	usd, _ := strconv.ParseFloat(u.Cost.String(), 64) // a counter is a float; the exact sums are get_usage's
	m.tokens.WithLabelValues(model, "input").Add(float64(u.InputTokens))
	m.tokens.WithLabelValues(model, "output").Add(float64(u.OutputTokens))
	m.cost.WithLabelValues(model).Add(usd)
	for _, k := range keys {
		key := bounded(m.keys, k)
		m.keyTokens.WithLabelValues(key).Add(float64(u.InputTokens + u.OutputTokens))
		m.keyCost.WithLabelValues(key).Add(usd)
	}
}

func (m *taskMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.tokens.Describe(ch)
	m.cost.Describe(ch)
	m.reports.Describe(ch)
	m.keyTokens.Describe(ch)
	m.keyCost.Describe(ch)
	m.claims.Describe(ch)
	m.wait.Describe(ch)
	m.took.Describe(ch)
	m.ends.Describe(ch)
}

func (m *taskMetrics) Collect(ch chan<- prometheus.Metric) {
	m.tokens.Collect(ch)
	m.cost.Collect(ch)
	m.reports.Collect(ch)
	m.keyTokens.Collect(ch)
	m.keyCost.Collect(ch)
	m.claims.Collect(ch)
	m.wait.Collect(ch)
	m.took.Collect(ch)
	m.ends.Collect(ch)
}

// TaskObserver returns a new ledger.Observer of the kind a hub gives its
// ledger — its task metrics, registered nowhere — for a benchmark of what
// observing costs the ledger (cksbench ledger --observe).
func TaskObserver() ledger.Observer { return newTaskMetrics() }

// limitCollector exports list_limits on /metrics: per concurrency or rate
// limit (issue 42), how many keys it governs are held now and how many are
// full — a limit whose keys stay full is where a fleet's work waits. One
// small read a scrape (the limits, the held keys from their partial index,
// the starts in the rate windows); no series without limits.
type limitCollector struct {
	svc             *ops.Services
	held, saturated *prometheus.Desc
}

func newLimitCollector(svc *ops.Services) *limitCollector {
	return &limitCollector{svc: svc,
		held: prometheus.NewDesc("cks_limit_keys_held",
			"The keys a limit governs that CLAIMED or RUNNING tasks hold now, or that were claimed in its rate window.", []string{"limit"}, nil),
		saturated: prometheus.NewDesc("cks_limit_keys_saturated",
			"The keys a limit governs that are full now: at its max_running, or at its starts per interval.", []string{"limit"}, nil),
	}
}

func (c *limitCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.held; ch <- c.saturated }

func (c *limitCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := c.svc.Tasks.Limits(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.held, err)
		return
	}
	for _, st := range l.Limits {
		ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(st.Held), st.Name)
		ch <- prometheus.MustNewConstMetric(c.saturated, prometheus.GaugeValue, float64(st.Saturated), st.Name)
	}
}
