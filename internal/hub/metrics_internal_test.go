package hub

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// TestUnclaimedMetrics: /metrics counts the unclaimed task types and each
// one's waiting tasks (issue 39 item 8), on both backends.
func TestUnclaimedMetrics(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		for _, typ := range []string{"build", "build", "lint"} {
			if _, _, err := s.Tasks.Enqueue(context.Background(), cks.NewTask{Type: typ}); err != nil {
				t.Fatal(err)
			}
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(newUnclaimedCollector(&ops.Services{Tasks: s.Tasks, Liveness: liveness.NewService(s.Driver(), c), Clock: c}))
		want := func(text string) {
			t.Helper()
			if err := testutil.GatherAndCompare(reg, strings.NewReader(text), "cks_task_types_unclaimed", "cks_tasks_unclaimed"); err != nil {
				t.Fatal(err)
			}
		}
		want(`# HELP cks_task_types_unclaimed Task types with OPEN tasks due for over a minute that no worker claims (none held, no live process naming the type).
# TYPE cks_task_types_unclaimed gauge
cks_task_types_unclaimed 0
`)
		c.Advance(2 * time.Minute)
		want(`# HELP cks_task_types_unclaimed Task types with OPEN tasks due for over a minute that no worker claims (none held, no live process naming the type).
# TYPE cks_task_types_unclaimed gauge
cks_task_types_unclaimed 2
# HELP cks_tasks_unclaimed The due OPEN tasks of each unclaimed task type (at most 100 types, the longest-waiting).
# TYPE cks_tasks_unclaimed gauge
cks_tasks_unclaimed{type="build"} 2
cks_tasks_unclaimed{type="lint"} 1
`)
	})
}

// TestClaimsWaitingMetric: cks_claims_waiting counts the claims held for
// work, on both backends.
func TestClaimsWaitingMetric(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		reg := prometheus.NewRegistry()
		reg.MustRegister(claimsWaiting(s.Tasks))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "idle", N: 1, Wait: ledger.MaxClaimWait})
			done <- err
		}()
		deadline := time.Now().Add(time.Minute)
		for s.Tasks.ClaimsWaiting() != 1 {
			if time.Now().After(deadline) {
				t.Fatal("the claim is not held")
			}
			time.Sleep(2 * time.Millisecond)
		}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(`# HELP cks_claims_waiting The claim_tasks calls held for work now (wait_s: the long poll of idle agents).
# TYPE cks_claims_waiting gauge
cks_claims_waiting 1
`), "cks_claims_waiting"); err != nil {
			t.Fatal(err)
		}
		cancel()
		<-done
	})
}

// TestTaskCountsOther: cks_tasks names ledger.MaxCountedTypes types (the
// most due OPEN tasks first) and counts every other type's tasks as
// type="other", every state of each, on both backends.
func TestTaskCountsOther(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		var batch []cks.NewTask
		for i := range ledger.MaxCountedTypes + 2 {
			n := 2
			if i >= ledger.MaxCountedTypes {
				n = 1 // the two least busy: not named
			}
			for range n {
				batch = append(batch, cks.NewTask{Type: fmt.Sprintf("t%02d", i)})
			}
		}
		if _, err := s.Tasks.EnqueueMany(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(newTaskCounts(s.Tasks))
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		openBy := map[string]float64{}
		series := 0
		for _, f := range fams {
			for _, m := range f.Metric {
				series++
				labels := map[string]string{}
				for _, l := range m.Label {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["state"] == string(cks.TaskOpen) {
					openBy[labels["type"]] = m.GetGauge().GetValue()
				}
			}
		}
		if want := (ledger.MaxCountedTypes + 1) * len(ledger.All); series != want {
			t.Errorf("%d series, want %d", series, want)
		}
		if openBy[ledger.OtherType] != 2 || openBy["t00"] != 2 || openBy[fmt.Sprintf("t%02d", ledger.MaxCountedTypes-1)] != 2 ||
			len(openBy) != ledger.MaxCountedTypes+1 {
			t.Errorf("OPEN by type %v, want 2 for each of t00…t%02d and 2 for other", openBy, ledger.MaxCountedTypes-1)
		}
	})
}
