package hub_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/waitfor"
)

// scrape reads the hub's /metrics as the admin.
func (h testHub) scrape(t testing.TB) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest("GET", h.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("/metrics: %d %s", resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// sample is the metric of fam whose labels are exactly labels (name=value
// pairs), nil when there is none.
func sample(fam *dto.MetricFamily, labels ...string) *dto.Metric {
	if fam == nil {
		return nil
	}
	for _, m := range fam.Metric {
		if len(m.Label)*2 != len(labels) {
			continue
		}
		ok := true
		for i := 0; i < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
			}
			ok = ok && found
		}
		if ok {
			return m
		}
	}
	return nil
}

// TestTaskMetrics (both backends): a real hub's /metrics after tasks of two
// types were created, claimed, completed, failed (retryably, finally) and
// retried through its API, on an injected clock: cks_tasks counts every
// state of each type (and of the others, as type="other"), read from the
// ledger's cache (a task created within ledger.CountsTTL of the last scrape
// is not in the next one); the claim wait and attempt duration histograms
// hold exactly the waits and lengths of this hub's claims and attempts by
// type; the outcomes count each attempt's end by type.
func TestTaskMetrics(t *testing.T) {
	for name, db := range hubDatabases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := clock.NewFake(backendtest.T0)
			set := config.DefaultHub()
			set.Ledger.RetryBackoff = 0 // a retried task is claimable at once
			h := runHub(t, hub.Config{DatabaseURL: db(t), Clock: c, Settings: set})
			create := func(typ string, maxAttempts int) int64 {
				t.Helper()
				var out struct{ Task cks.Task }
				if st := h.call(t, "POST", "/v1/tasks", fmt.Sprintf(`{"type":%q,"title":"x","max_attempts":%d}`, typ, maxAttempts), &out); st != http.StatusCreated {
					t.Fatalf("create %s: %d", typ, st)
				}
				return out.Task.ID
			}
			claim := func(typ string, n int) []cks.ClaimedTask {
				t.Helper()
				var out cks.ClaimedTasks
				if st := h.call(t, "POST", "/v1/tasks/claim", fmt.Sprintf(`{"types":[%q],"n":%d,"lease_s":60}`, typ, n), &out); st != http.StatusOK || len(out.Tasks) != n {
					t.Fatalf("claim %d of %s: %d %+v", n, typ, st, out)
				}
				return out.Tasks
			}
			finish := func(ct cks.ClaimedTask, verb, body string) {
				t.Helper()
				if st := h.call(t, "POST", fmt.Sprintf("/v1/tasks/%d/%s", ct.ID, verb), body, nil); st != http.StatusOK {
					t.Fatalf("%s %d: %d", verb, ct.ID, st)
				}
			}
			lease := func(ct cks.ClaimedTask) string { return fmt.Sprintf(`"lease_token":%q`, ct.LeaseToken) }

			create("alpha", 2)
			create("alpha", 2)
			beta := create("beta", 1)
			create("beta", 1)
			create("beta", 1)
			// A first scrape, as Prometheus makes one every interval: both
			// types have due tasks, so both are named.
			fams := h.scrape(t)
			if m := sample(fams["cks_tasks"], "state", "OPEN", "type", "alpha"); m.GetGauge().GetValue() != 2 {
				t.Fatalf("cks_tasks OPEN alpha: %v, want 2", m)
			}
			c.Advance(2 * time.Second)
			as := claim("alpha", 2) // waited 2 s each
			c.Advance(3 * time.Second)
			finish(as[0], "complete", `{`+lease(as[0])+`,"result":"ok"}`)                 // 3 s
			finish(as[1], "fail", `{`+lease(as[1])+`,"retryable":true,"reason":"flaky"}`) // 3 s, retried
			c.Advance(time.Second)
			again := claim("alpha", 1) // not a first claim
			c.Advance(4 * time.Second)
			finish(again[0], "fail", `{`+lease(again[0])+`,"retryable":true,"reason":"flaky"}`) // 4 s, its last attempt
			bs := claim("beta", 1)                                                              // waited 10 s
			if bs[0].ID != beta {
				t.Fatalf("claimed beta task %d, want %d", bs[0].ID, beta)
			}
			c.Advance(5 * time.Second)
			finish(bs[0], "fail", `{`+lease(bs[0])+`,"reason":"broken"}`) // 5 s
			finish(bs[0], "retry", `{"reason":"fixed"}`)                  // FAILED → OPEN, no attempt of its own

			fams = h.scrape(t)
			wantTasks := map[string]map[cks.TaskState]float64{
				"alpha":          {cks.TaskCompleted: 1, cks.TaskFailed: 1},
				"beta":           {cks.TaskOpen: 3},
				ledger.OtherType: {},
			}
			for typ, states := range wantTasks {
				for _, st := range ledger.All {
					if m := sample(fams["cks_tasks"], "state", string(st), "type", typ); m == nil || m.GetGauge().GetValue() != states[st] {
						t.Errorf("cks_tasks{state=%s,type=%s}: %v, want %v", st, typ, m, states[st])
					}
				}
			}
			if n := len(fams["cks_tasks"].GetMetric()); n != 3*len(ledger.All) {
				t.Errorf("cks_tasks has %d series, want %d (every state of alpha, beta, other)", n, 3*len(ledger.All))
			}
			histogram := func(name, typ string, count uint64, sum float64) {
				t.Helper()
				m := sample(fams[name], "type", typ)
				if m.GetHistogram().GetSampleCount() != count || m.GetHistogram().GetSampleSum() != sum {
					t.Errorf("%s{type=%s}: %v, want count %d, sum %v", name, typ, m, count, sum)
				}
			}
			histogram("cks_task_claim_wait_seconds", "alpha", 2, 4)
			histogram("cks_task_claim_wait_seconds", "beta", 1, 10)
			histogram("cks_task_attempt_duration_seconds", "alpha", 3, 10)
			histogram("cks_task_attempt_duration_seconds", "beta", 1, 5)
			counter := func(name string, want float64, labels ...string) {
				t.Helper()
				if m := sample(fams[name], labels...); m.GetCounter().GetValue() != want {
					t.Errorf("%s%v: %v, want %v", name, labels, m, want)
				}
			}
			counter("cks_task_claims_total", 3, "type", "alpha")
			counter("cks_task_claims_total", 1, "type", "beta")
			counter("cks_task_attempts_ended_total", 1, "type", "alpha", "outcome", "completed")
			counter("cks_task_attempts_ended_total", 1, "type", "alpha", "outcome", "retried")
			counter("cks_task_attempts_ended_total", 1, "type", "alpha", "outcome", "failed")
			counter("cks_task_attempts_ended_total", 1, "type", "beta", "outcome", "failed")
			if n := len(fams["cks_task_attempts_ended_total"].GetMetric()); n != 4 {
				t.Errorf("cks_task_attempts_ended_total has %d series, want 4", n)
			}

			// Within ledger.CountsTTL the counts are the cached ones.
			create("beta", 1)
			if m := sample(h.scrape(t)["cks_tasks"], "state", "OPEN", "type", "beta"); m.GetGauge().GetValue() != 3 {
				t.Errorf("cks_tasks OPEN beta within the TTL: %v, want the cached 3", m)
			}
			c.Advance(ledger.CountsTTL)
			if m := sample(h.scrape(t)["cks_tasks"], "state", "OPEN", "type", "beta"); m.GetGauge().GetValue() != 4 {
				t.Errorf("cks_tasks OPEN beta after the TTL: %v, want 4", m)
			}

			// The metrics that export nothing until there is something to
			// count: an agent process, a type nobody claims for a minute
			// (beta's), a sweeper's pass.
			if st := h.call(t, "POST", "/v1/processes/summarizer/report", `{"instance_id":"sum-1"}`, nil); st != http.StatusOK {
				t.Fatalf("report: %d", st)
			}
			c.Advance(2 * time.Minute)
			// A limit with one key held at its cap (its lease lasting past
			// the scrapes: the clock stands still from here).
			if st := h.call(t, "POST", "/v1/limits", `{"name":"gpu","pattern":"gpu:*","max_running":1}`, nil); st != http.StatusOK {
				t.Fatalf("set_limit: %d", st)
			}
			if st := h.call(t, "POST", "/v1/tasks", `{"type":"render","title":"x","concurrency_keys":["gpu:a"]}`, nil); st != http.StatusCreated {
				t.Fatalf("create keyed: %d", st)
			}
			render := claim("render", 1)[0]
			// A usage report (TestUsageMetrics checks its counts).
			if st := h.call(t, "POST", fmt.Sprintf("/v1/tasks/%d/usage", render.ID), `{`+lease(render)+`,"model":"m","input_tokens":1}`, nil); st != http.StatusCreated {
				t.Fatalf("report_usage: %d", st)
			}
			waitfor.Until(t, "every metric exported", func() bool {
				fams = h.scrape(t)
				return fams["cks_tasks_unclaimed"] != nil && fams["cks_process_instances"] != nil && fams["cks_sweeper_run_duration_seconds"] != nil
			})
			if m := sample(fams["cks_limit_keys_saturated"], "limit", "gpu"); m.GetGauge().GetValue() != 1 {
				t.Errorf("cks_limit_keys_saturated gpu: %v, want 1", m)
			}
			if m := sample(fams["cks_limit_keys_held"], "limit", "gpu"); m.GetGauge().GetValue() != 1 {
				t.Errorf("cks_limit_keys_held gpu: %v, want 1", m)
			}
			checkDocumented(t, fams)
		})
	}
}

// checkDocumented fails t unless every metric the Grafana dashboard
// (docs/grafana/cks.json, valid JSON) queries is one /metrics exported
// (fams), and the list of metrics in docs/operations.md names every cks_
// metric exported and no other: renaming a metric fails it until the
// dashboard and the docs follow.
func checkDocumented(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	exported := map[string]bool{}
	for name, fam := range fams {
		if !strings.HasPrefix(name, "cks_") {
			continue
		}
		exported[name] = true
		if fam.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				exported[name+s] = true
			}
		}
	}
	metricName := regexp.MustCompile(`\bcks_[a-z0-9_]+`)

	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "grafana", "cks.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("docs/grafana/cks.json: %v", err)
	}
	queried := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range metricName.FindAllString(tg.Expr, -1) {
				queried++
				if !exported[name] {
					t.Errorf("dashboard panel %q queries %s, which /metrics does not export", p.Title, name)
				}
			}
		}
	}
	if queried == 0 {
		t.Fatal("the dashboard queries no cks_ metric")
	}

	ops, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(ops), "<!-- metrics -->")
	end := strings.Index(string(ops), "<!-- /metrics -->")
	if start < 0 || end < start {
		t.Fatal("docs/operations.md has no <!-- metrics --> … <!-- /metrics --> list")
	}
	listed := map[string]bool{}
	for _, name := range metricName.FindAllString(string(ops[start:end]), -1) {
		listed[name] = true
		if !exported[name] {
			t.Errorf("docs/operations.md lists %s, which /metrics does not export", name)
		}
	}
	for name, fam := range fams {
		if strings.HasPrefix(name, "cks_") && !listed[name] {
			t.Errorf("/metrics exports %s (%s), which docs/operations.md does not list", name, fam.GetType())
		}
	}
}

// TestUsageMetrics (both backends): the usage a real hub's API records
// (report_usage) is counted on /metrics by model and direction, and
// again under each concurrency key of its task; a report of a task without
// keys under key="".
func TestUsageMetrics(t *testing.T) {
	for name, db := range hubDatabases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := runHub(t, hub.Config{DatabaseURL: db(t)})
			work := func(typ, keys string) cks.ClaimedTask {
				t.Helper()
				if st := h.call(t, "POST", "/v1/tasks", fmt.Sprintf(`{"type":%q,"concurrency_keys":%s}`, typ, keys), nil); st != http.StatusCreated {
					t.Fatalf("create %s: %d", typ, st)
				}
				var out cks.ClaimedTasks
				if st := h.call(t, "POST", "/v1/tasks/claim", fmt.Sprintf(`{"types":[%q]}`, typ), &out); st != http.StatusOK || len(out.Tasks) != 1 {
					t.Fatalf("claim %s: %d %+v", typ, st, out)
				}
				return out.Tasks[0]
			}
			report := func(ct cks.ClaimedTask, body string) {
				t.Helper()
				if st := h.call(t, "POST", fmt.Sprintf("/v1/tasks/%d/usage", ct.ID), fmt.Sprintf(`{"lease_token":%q,%s}`, ct.LeaseToken, body), nil); st != http.StatusCreated {
					t.Fatalf("report_usage %d: %d", ct.ID, st)
				}
			}
			keyed, plain := work("llm", `["openai","team:a"]`), work("plain", `[]`)
			report(keyed, `"model":"gpt-5","input_tokens":100,"output_tokens":20,"cost":"0.25"`)
			report(keyed, `"model":"gpt-5","input_tokens":50,"cost":"0.5"`)
			report(plain, `"model":"local","output_tokens":7`)
			fams := h.scrape(t)
			counter := func(name string, want float64, labels ...string) {
				t.Helper()
				if m := sample(fams[name], labels...); m.GetCounter().GetValue() != want {
					t.Errorf("%s%v: %v, want %v", name, labels, m, want)
				}
			}
			counter("cks_usage_tokens_total", 150, "model", "gpt-5", "direction", "input")
			counter("cks_usage_tokens_total", 20, "model", "gpt-5", "direction", "output")
			counter("cks_usage_cost_usd_total", 0.75, "model", "gpt-5")
			for _, key := range []string{"openai", "team:a"} {
				counter("cks_usage_key_tokens_total", 170, "key", key)
				counter("cks_usage_key_cost_usd_total", 0.75, "key", key)
			}
			counter("cks_usage_key_tokens_total", 7, "key", "")
			counter("cks_usage_tokens_total", 7, "model", "local", "direction", "output")
			counter("cks_usage_reports_total", 2, "model", "gpt-5")
			counter("cks_usage_reports_total", 1, "model", "local")
		})
	}
}
