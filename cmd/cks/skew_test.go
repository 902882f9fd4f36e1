package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
)

// skewTask is how long the exec agent works the task of TestSkewedClocks:
// long enough for the hub's lease reaper (every 200 ms) to pass over its
// lease many times.
const skewTask = "2"

// TestSkewedClocks (issue 26, item 2): a hub whose host clock is 30 s
// ahead and an exec agent whose host clock is 30 s behind (the skew played
// by CKS_TEST_CLOCK_SKEW), real processes on one Postgres database. With
// the correction (the default) both tell the time by the database's clock:
// the hub lists the agent alive, and the agent's task completes after one
// claim, its lease never reclaimed. With it turned off
// (CKS_TEST_CLOCK_CORRECTION=off) the same setup goes wrong as it did before
// the correction, which shows the test can fail: the agent's heartbeats
// read a minute old to the hub, so it is not alive, and the hub's reaper
// reclaims the lease of a task the agent is working. The windows (alive
// within 6 s of a heartbeat, a lease reclaimed 10 s after its renewal) are
// far below the 60 s the clocks disagree by, and far above a loaded
// machine's stalls.
func TestSkewedClocks(t *testing.T) {
	reaperEnabled, reaperInterval := config.SweeperEnv(sweeper.LeaseReaperID)
	for _, tc := range []struct {
		correction string
		wantRight  bool
	}{{"on", true}, {"off", false}} {
		t.Run("correction "+tc.correction, func(t *testing.T) {
			db := backendtest.PostgresURL(t)
			both := []string{config.EnvTestClockCorrection + "=" + tc.correction, "CKS_STALE_WINDOW=10s"}
			h := startHubDir(t, "serve", datadir.Dir(t.TempDir()),
				append([]string{config.EnvTestClockSkew + "=30s", reaperEnabled + "=true", reaperInterval + "=200ms"}, both...),
				"--database", db)
			a := startAgent(t, append([]string{config.EnvTestClockSkew + "=-30s"}, both...),
				"exec", "--types", "skewed", "--database", db, "--liveness-interval", "2", "--poll-interval", "0.2",
				"--", "sleep", skewTask)
			api := client.New(h.url, h.token)
			ctx := context.Background()

			// The hub's /metrics shows the correction: the database's clock
			// is 30 s behind the hub's host's; 0 when nothing corrects.
			wantOffset := map[bool]float64{true: -30, false: 0}[tc.wantRight]
			if off := clockOffsetMetric(t, h); off < wantOffset-1 || off > wantOffset+1 {
				t.Errorf("cks_clock_offset_seconds %v, want about %v", off, wantOffset)
			}
			// So does /healthz, while a correction is in use.
			var hz struct {
				Clock *struct {
					OffsetS float64 `json:"offset_s"`
				} `json:"clock"`
			}
			if code, body := h.get(t, "/healthz"); code != 200 || json.Unmarshal([]byte(body), &hz) != nil ||
				(hz.Clock != nil) != tc.wantRight || hz.Clock != nil && (hz.Clock.OffsetS < -31 || hz.Clock.OffsetS > -29) {
				t.Errorf("/healthz: HTTP %d %s, want the clock's offset (about -30 s) only with the correction", code, body)
			}

			// The agent's row, as the hub judges it: alive only when the
			// clocks agree. Read it repeatedly while the task runs.
			var seen []cks.ProcessStatus
			process := func() (bool, string) {
				if a.exited() {
					t.Fatalf("the agent exited (status %d)\n%s", a.code, a.stderr.String())
				}
				ps, err := api.ListProcesses(ctx)
				if err != nil {
					return false, err.Error()
				}
				for _, p := range ps {
					if p.PID == a.cmd.Process.Pid {
						seen = append(seen, p.Status)
						return true, fmt.Sprintf("%s, heartbeat %.1fs old", p.Status, p.HeartbeatAgeS)
					}
				}
				return false, "the agent's row is not listed yet"
			}
			eventually(t, 30*time.Second, "the agent's row listed by the hub", process)

			task, _, err := api.CreateTask(ctx, cks.NewTask{Type: "skewed", Title: "worked across skewed hosts"})
			if err != nil {
				t.Fatal(err)
			}
			var got cks.Task
			eventually(t, 45*time.Second, "the task completed, or reclaimed by the reaper", func() (bool, string) {
				process()
				got, err = api.GetTask(ctx, task.ID)
				if err != nil {
					return false, err.Error()
				}
				return got.State == cks.TaskCompleted || reclaimed(got), fmt.Sprintf("%s after %d attempts", got.State, got.Attempts)
			})
			_, last := process()
			alive := !slices.ContainsFunc(seen, func(s cks.ProcessStatus) bool { return s != cks.ProcessAlive })
			reads := map[cks.ProcessStatus]int{}
			for _, s := range seen {
				reads[s]++
			}
			t.Logf("correction %s: the hub read the agent %v (last: %s); the task %s after %d attempts, reclaimed %v",
				tc.correction, reads, last, got.State, got.Attempts, reclaimed(got))
			if !tc.wantRight {
				if alive || !reclaimed(got) {
					t.Fatalf("with the correction off, a 60 s skew should make the agent read not alive and its lease reclaimed "+
						"early: alive %v (%v), reclaimed %v — the test cannot tell the correction works", alive, reads, reclaimed(got))
				}
				return
			}
			if !alive {
				t.Errorf("the hub read the agent %v, want alive at every read: liveness judged by skewed clocks", reads)
			}
			if reclaimed(got) || got.State != cks.TaskCompleted || got.Attempts != 1 {
				t.Errorf("task %s after %d attempts, events %+v: want COMPLETED after one claim, its lease never reclaimed",
					got.State, got.Attempts, got.Events)
			}
		})
	}
}

// clockOffsetMetric reads cks_clock_offset_seconds from h's /metrics.
func clockOffsetMetric(t testing.TB, h *hubProc) float64 {
	t.Helper()
	code, body := h.get(t, "/metrics")
	m := regexp.MustCompile(`(?m)^cks_clock_offset_seconds (\S+)$`).FindStringSubmatch(body)
	if code != 200 || m == nil {
		t.Fatalf("/metrics: HTTP %d without cks_clock_offset_seconds:\n%s", code, body)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// reclaimed tells whether the lease reaper took task's lease back.
func reclaimed(task cks.Task) bool {
	return slices.ContainsFunc(task.Events, func(e cks.TaskEvent) bool { return e.Actor == "reaper" })
}
