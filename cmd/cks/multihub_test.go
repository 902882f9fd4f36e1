package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// The three-hub deployment (issue 26, item 4): three `cks serve` hubs on one
// Postgres database, each with its own data directory, and agents of two
// kinds that open the database themselves, all real processes. What a
// multi-node deployment promises is checked phase by phase in
// TestThreeHubs; the figures it measures are logged (t.Logf, -v) and one
// run's are in docs/benchmarks.md.

const (
	// mhLeaderTTL is the hubs' CKS_LEADER_TTL: a killed leader is replaced
	// within it plus a third of it.
	mhLeaderTTL = 2 * time.Second
	// mhStaleWindow is the hubs' CKS_STALE_WINDOW, their default lease
	// (the abandoned claim names its own, 1 s, which the lease reaper
	// takes back once it ran out). The agents are not given it: their
	// leases stay at the default three minutes, so no task of theirs is
	// ever reclaimed (a second claim would be a bug).
	mhStaleWindow = 2 * time.Second
	// mhLoad is how many tasks the load phase creates round-robin through
	// the three hubs; mhAfterKill how many go through the last hub.
	mhLoad      = 300
	mhAfterKill = 30
	// mhOrphans is how many orphan objects graph_health finds.
	mhOrphans = 12
	// mhFailoverSlack is what a loaded machine may add to the bound of a
	// failover (TTL plus a third of it): scheduling, the new leader's log.
	mhFailoverSlack = 1500 * time.Millisecond
	// mhLeaderLog is what a hub logs when it becomes the leader.
	mhLeaderLog = `msg="this hub is the leader"`
)

// mhHub is one of the three hubs with its API client.
type mhHub struct {
	*hubProc
	name string
	api  *client.Client
}

// mhHealth is the part of /healthz the test reads.
type mhHealth struct {
	Status string `json:"status"`
	Leader *struct {
		ID      string `json:"id"`
		ThisHub bool   `json:"this_hub"`
	} `json:"leader"`
}

// eventually calls cond until it reports true or the deadline passes; then
// the test fails with what and the last reason cond gave.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	ok := poll(timeout, func() bool {
		var done bool
		done, last = cond()
		return done
	})
	if !ok {
		t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
	}
}

// health reads h's /healthz.
func (h *mhHub) health() (mhHealth, error) {
	var out mhHealth
	resp, err := http.Get(h.url + "/healthz")
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return out, err
	}
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("/healthz: HTTP %d: %s", resp.StatusCode, b)
	}
	return out, json.Unmarshal(b, &out)
}

// sweepersCLI lists h's sweepers with `cks sweeper list --json`.
func (h *mhHub) sweepersCLI(t testing.TB) []cks.SweeperStatus {
	t.Helper()
	r := runCKS(t, nil, "sweeper", "list", "--json", "--data-dir", string(h.dir))
	if r.code != 0 {
		t.Fatalf("%s: sweeper list --json: exit %d\n%s", h.name, r.code, r.stderr)
	}
	var out cks.SweeperList
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%s: sweeper list --json: %v\n%s", h.name, err, r.stdout)
	}
	return out.Sweepers
}

// sweeper reads one sweeper's status on h through the API.
func (h *mhHub) sweeper(t testing.TB, id string) cks.SweeperStatus {
	t.Helper()
	st, err := h.api.SweeperStatus(context.Background(), id)
	if err != nil {
		t.Fatalf("%s: status of sweeper %s: %v", h.name, id, err)
	}
	return st
}

// leaderLogs counts how often h has logged that it became the leader.
func (h *mhHub) leaderLogs() int { return strings.Count(h.stderr.String(), mhLeaderLog) }

// startHubs starts n `cks serve` hubs on db at once, each on a data
// directory of its own, and waits until all serve.
func startHubs(t testing.TB, db string, env []string, n int) []*mhHub {
	t.Helper()
	dirs := make([]datadir.Dir, n)
	for i := range dirs {
		dirs[i] = datadir.Dir(t.TempDir())
	}
	procs, errs := make([]*hubProc, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { procs[i], errs[i] = spawnHub(dirs[i], "serve", env, "--database", db) })
	}
	wg.Wait()
	hubs := make([]*mhHub, n)
	for i, p := range procs {
		if p != nil {
			t.Cleanup(p.kill)
			hubs[i] = &mhHub{hubProc: p, name: fmt.Sprintf("hub%d", i+1), api: client.New(p.url, p.token)}
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return hubs
}

// agreedLeader waits until every hub's /healthz names one leader, which is
// one of them (this_hub on its own /healthz and on no other), and returns
// its index in hubs and its id.
func agreedLeader(t testing.TB, hubs []*mhHub) (int, string) {
	t.Helper()
	idx, id := -1, ""
	eventually(t, 30*time.Second, "the hubs to agree on one maintenance leader (/healthz)", func() (bool, string) {
		idx, id = -1, ""
		var seen []string
		for i, h := range hubs {
			hz, err := h.health()
			if err != nil {
				return false, fmt.Sprintf("%s: %v", h.name, err)
			}
			if hz.Leader == nil {
				return false, fmt.Sprintf("%s names no leader", h.name)
			}
			seen = append(seen, fmt.Sprintf("%s: leader %s this_hub=%v", h.name, hz.Leader.ID, hz.Leader.ThisHub))
			if id == "" {
				id = hz.Leader.ID
			} else if hz.Leader.ID != id {
				return false, strings.Join(seen, "; ") + " — the hubs disagree"
			}
			if hz.Leader.ThisHub {
				if idx >= 0 {
					return false, strings.Join(seen, "; ") + " — two hubs say they lead"
				}
				idx = i
			}
		}
		return idx >= 0, strings.Join(seen, "; ")
	})
	return idx, id
}

// checkStandby checks every hub's `cks sweeper list --json`: each running
// sweeper names leader; the leader's are not standby, every other hub's are
// and have never run a pass.
func checkStandby(t testing.TB, hubs []*mhHub, leaderIdx int, leader string) {
	t.Helper()
	eventually(t, 30*time.Second, "every non-leader hub's sweepers to stand by", func() (bool, string) {
		for i, h := range hubs {
			for _, s := range h.sweepersCLI(t) {
				if !s.Running {
					continue
				}
				switch {
				case s.Leader != leader:
					return false, fmt.Sprintf("%s: sweeper %s names leader %q, want %q", h.name, s.AgentID, s.Leader, leader)
				case i == leaderIdx && s.Standby:
					// A new leader's runners leave standby at the pass
					// its election runs at once.
					return false, fmt.Sprintf("%s, the leader, has sweeper %s on standby", h.name, s.AgentID)
				case i != leaderIdx && s.RunCount != 0:
					t.Fatalf("%s is not the leader (%s) but its sweeper %s ran %d passes: two hubs maintaining, "+
						"or the leadership changed without a kill (a leader stalled past CKS_LEADER_TTL)", h.name, leader, s.AgentID, s.RunCount)
				case i != leaderIdx && !s.Standby:
					return false, fmt.Sprintf("%s: sweeper %s not (yet) on standby", h.name, s.AgentID)
				}
			}
		}
		return true, ""
	})
}

// loadTasks creates n tasks of typ round-robin through hubs, one goroutine
// per hub, and returns their ids.
func loadTasks(t testing.TB, hubs []*mhHub, typ string, n int) []int64 {
	t.Helper()
	ids := make([][]int64, len(hubs))
	errs := make([]error, len(hubs))
	var wg sync.WaitGroup
	for i, h := range hubs {
		wg.Go(func() {
			for j := i; j < n; j += len(hubs) {
				task, _, err := h.api.CreateTask(context.Background(), cks.NewTask{Type: typ, Title: fmt.Sprintf("%s %d", typ, j)})
				if err != nil {
					errs[i] = fmt.Errorf("%s: create task %d: %w", h.name, j, err)
					return
				}
				ids[i] = append(ids[i], task.ID)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return slices.Concat(ids...)
}

// waitCompleted waits until every task of typ (n of them) is COMPLETED,
// reading the counts through h; a FAILED one fails the test at once.
func waitCompleted(t testing.TB, h *mhHub, typ string, n int) {
	t.Helper()
	// The agents drain the tasks at the machine's pace: the wait fails when
	// none completes for 45 s, not when all take longer than that.
	const stall = 45 * time.Second
	var last string
	if !pollProgress(stall, func() (bool, int) {
		c, err := h.api.CountTasks(context.Background(), cks.CountTasksInput{Type: []string{typ}})
		if err != nil {
			last = err.Error()
			return false, -1
		}
		if c.Counts[cks.TaskFailed] > 0 {
			t.Fatalf("%d %s tasks FAILED: %v", c.Counts[cks.TaskFailed], typ, c.Counts)
		}
		last = fmt.Sprint(c.Counts)
		return c.Total == n && c.Counts[cks.TaskCompleted] == n, c.Counts[cks.TaskCompleted]
	}) {
		t.Fatalf("no %s task COMPLETED for %s while waiting for %d (counts through %s); last seen: %s", typ, stall, n, h.name, last)
	}
}

// claimRecord is one task's claim, read from its history.
type claimRecord struct {
	at    time.Time
	actor string
}

// checkOneClaim reads every task's history through the hubs in turn
// (get_task) and checks it was claimed once, by a worker, and completed
// once; it returns each task's claim.
func checkOneClaim(t testing.TB, hubs []*mhHub, ids []int64) []claimRecord {
	t.Helper()
	out := make([]claimRecord, len(ids))
	errs := make([]error, len(hubs))
	var wg sync.WaitGroup
	for i, h := range hubs {
		wg.Go(func() {
			for j := i; j < len(ids); j += len(hubs) {
				task, err := h.api.GetTask(context.Background(), ids[j])
				if err != nil {
					errs[i] = fmt.Errorf("%s: get task %d: %w", h.name, ids[j], err)
					return
				}
				var claims, completions []cks.TaskEvent
				for _, e := range task.Events {
					switch e.To {
					case cks.TaskClaimed:
						claims = append(claims, e)
					case cks.TaskCompleted:
						completions = append(completions, e)
					}
				}
				if task.State != cks.TaskCompleted || task.Attempts != 1 || len(claims) != 1 || len(completions) != 1 {
					errs[i] = fmt.Errorf("task %d: %s after %d attempts, %d claims and %d completions in its history, "+
						"want COMPLETED after exactly one claim (a double claim?): %+v", ids[j], task.State, task.Attempts,
						len(claims), len(completions), task.Events)
					return
				}
				out[j] = claimRecord{at: claims[0].At, actor: claims[0].Actor}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return out
}

// claimRate is the claims per second over the span of the claims' events,
// and how many tasks each claimer took.
func claimRate(claims []claimRecord) (float64, map[string]int) {
	by := map[string]int{}
	first, last := claims[0].at, claims[0].at
	for _, c := range claims {
		by[c.actor]++
		if c.at.Before(first) {
			first = c.at
		}
		if c.at.After(last) {
			last = c.at
		}
	}
	return float64(len(claims)-1) / last.Sub(first).Seconds(), by
}

// enrichTasks lists the enrich tasks through h and returns how many there
// are per object, and whether all are COMPLETED.
func enrichTasks(t testing.TB, h *mhHub) (map[int64]int, bool) {
	t.Helper()
	per := map[int64]int{}
	done := true
	for after := int64(0); ; {
		page, err := h.api.ListTasks(context.Background(), cks.TaskFilter{Types: []string{cks.TaskTypeEnrich}, After: after, Limit: cks.MaxListLimit})
		if err != nil {
			t.Fatalf("%s: list enrich tasks: %v", h.name, err)
		}
		for _, task := range page.Tasks {
			var p struct {
				ObjectID int64 `json:"object_id"`
			}
			if err := json.Unmarshal(task.Payload, &p); err != nil {
				t.Fatalf("enrich task %d: payload %s: %v", task.ID, task.Payload, err)
			}
			per[p.ObjectID]++
			if task.State == cks.TaskFailed {
				t.Fatalf("enrich task %d FAILED: %s", task.ID, task.LastError)
			}
			done = done && task.State == cks.TaskCompleted
		}
		if page.Next == 0 {
			return per, done
		}
		after = page.Next
	}
}

// checkEnrichOnce waits until every object of objs has its enrich task,
// all COMPLETED, and fails as soon as any object has two.
func checkEnrichOnce(t testing.TB, h *mhHub, objs []int64) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("one COMPLETED enrich task for each of %d orphans", len(objs)), func() (bool, string) {
		per, done := enrichTasks(t, h)
		for id, n := range per {
			if n > 1 {
				t.Fatalf("orphan %d has %d enrich tasks: the once-ever dedupe failed", id, n)
			}
		}
		for _, id := range objs {
			if per[id] != 1 {
				return false, fmt.Sprintf("orphan %d has no enrich task yet (%d tasks)", id, len(per))
			}
		}
		return done, fmt.Sprintf("%d enrich tasks, not all COMPLETED", len(per))
	})
}

// graphPasses waits until h's graph_health has run at least after+n passes,
// the last of which found want orphans and enqueued nothing, and returns
// its run count.
func graphPasses(t testing.TB, h *mhHub, after int64, n int, want int) int64 {
	t.Helper()
	var runs int64
	eventually(t, 30*time.Second, fmt.Sprintf("%d more graph_health passes on %s", n, h.name), func() (bool, string) {
		st := h.sweeper(t, sweeper.GraphHealthID)
		runs = st.RunCount
		if st.RunCount < after+int64(n) {
			return false, fmt.Sprintf("%d passes", st.RunCount)
		}
		b, _ := json.Marshal(st.Details)
		var rep sweeper.GraphReport
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatalf("graph_health details %s: %v", b, err)
		}
		if rep.EnrichEnqueued != 0 {
			t.Fatalf("%s: a graph_health pass after the orphans' enrich tasks enqueued %d more: %s", h.name, rep.EnrichEnqueued, b)
		}
		return rep.Orphans == want, fmt.Sprintf("details %s, want %d orphans", b, want)
	})
	return runs
}

// orphans creates n objects that share no term with any other (so that the
// enrichment agent links them to nothing and they stay orphans).
func orphans(t testing.TB, st *backend.Backend, tag string, n int) []int64 {
	t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		o, err := st.Objects.CreateObject(context.Background(), knowledge.NewObject{Kind: "note",
			Title:   fmt.Sprintf("orphan%s%d", tag, i),
			Content: json.RawMessage(fmt.Sprintf(`{"text":"solitary%s%d"}`, tag, i))})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = o.ID
	}
	return ids
}

// TestThreeHubs runs the multi-node deployment: three hubs on one Postgres
// database (CKS_LEADER_TTL 2 s), three exec agents claiming the same types
// and two enrichment agents, as real processes. In order it checks that
//   - exactly one hub leads and all three say which (/healthz), and the
//     others' sweepers stand by (`cks sweeper list --json`), never passing;
//   - 300 tasks created through the three hubs round-robin are all
//     completed by the exec agents, each claimed exactly once (its history
//     read through the API), by more than one agent;
//   - a process stop asked through one hub ends the agent's OS process, and
//     the others report it stopped; a sweeper stopped through one hub stops
//     on the other two, and started through a third runs again on the other
//     two — its passes on the leader;
//   - orphan objects get one enrich task each from graph_health, never a
//     second, however many passes follow, also after the leader changed;
//   - the leader killed (SIGKILL), another hub leads within the TTL plus a
//     third of it (plus slack for a loaded machine), the survivors agree,
//     and maintenance resumes there: a task claimed with a 1 s lease and
//     abandoned just before the kill is reaped by the new leader's lease
//     reaper, and the other survivor still never ran a pass;
//   - the non-leader survivor killed too, tasks created through the last hub
//     are completed, each claimed once, and the leader is unchanged.
//
// It logs the propagation times of the process stop and the sweeper
// stop/start, the claim rate and the failover time.
func TestThreeHubs(t *testing.T) {
	db := backendtest.PostgresURL(t)
	begin := time.Now()
	reaperEnabled, reaperInterval := config.SweeperEnv(sweeper.LeaseReaperID)
	_, graphInterval := config.SweeperEnv(sweeper.GraphHealthID)
	env := []string{
		"CKS_LEADER_TTL=" + mhLeaderTTL.String(),
		"CKS_STALE_WINDOW=" + mhStaleWindow.String(),
		reaperEnabled + "=true", reaperInterval + "=500ms",
		graphInterval + "=300ms",
	}
	hubs := startHubs(t, db, env, 3)
	ctx := context.Background()

	agentFlags := []string{"--database", db, "--liveness-interval", "0.3", "--poll-interval", "0.2"}
	var execs, enrichers []*agentProc
	for range 3 {
		execs = append(execs, startAgent(t, nil, slices.Concat([]string{"exec", "--types", "load,after"}, agentFlags, []string{"--", "echo", "done"})...))
	}
	for range 2 {
		enrichers = append(enrichers, startAgent(t, nil, slices.Concat([]string{"enrichment"}, agentFlags)...))
	}
	all := slices.Concat(execs, enrichers)
	instance := map[int]string{} // pid → instance id
	eventually(t, 30*time.Second, "every agent alive (list_processes through hub1)", func() (bool, string) {
		ps, err := hubs[0].api.ListProcesses(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range ps {
			if p.Status == cks.ProcessAlive {
				instance[p.PID] = p.InstanceID
			}
		}
		for _, a := range all {
			if a.exited() {
				t.Fatalf("agent %v exited (status %d)\n%s", a.cmd.Args, a.code, a.stderr.String())
			}
			if instance[a.cmd.Process.Pid] == "" {
				return false, fmt.Sprintf("pid %d not alive yet", a.cmd.Process.Pid)
			}
		}
		return true, ""
	})
	t.Logf("three hubs and %d agents up in %s", len(all), time.Since(begin).Round(time.Millisecond))

	// Exactly one leader, all three agree; the others stand by.
	li, leaderID := agreedLeader(t, hubs)
	checkStandby(t, hubs, li, leaderID)
	leaderHub, b, c := hubs[li], hubs[(li+1)%3], hubs[(li+2)%3]
	t.Logf("leader %s (%s); %s and %s stand by", leaderHub.name, leaderID, b.name, c.name)

	// No double claim under load.
	t0 := time.Now()
	ids := loadTasks(t, hubs, "load", mhLoad)
	created := time.Since(t0)
	waitCompleted(t, hubs[0], "load", mhLoad)
	drained := time.Since(t0)
	claims := checkOneClaim(t, hubs, ids)
	rate, by := claimRate(claims)
	if len(by) < 2 {
		t.Fatalf("one agent claimed every task (%v): the claims did not race", by)
	}
	t.Logf("load: %d tasks created through 3 hubs in %s (%.0f/s), all completed %s after the first, each claimed once; "+
		"%.0f claims/s over the claims' span, per agent %v", mhLoad, created.Round(time.Millisecond),
		float64(mhLoad)/created.Seconds(), drained.Round(time.Millisecond), rate, slices.Sorted(pairs(by)))

	// A process stop through one hub ends the OS process.
	target := execs[2]
	tid := instance[target.cmd.Process.Pid]
	t0 = time.Now()
	res, err := c.api.StopProcess(ctx, tid)
	if err != nil || !res.Found || res.InstanceID != tid {
		t.Fatalf("stop of %s through %s: %+v, %v; want found", tid, c.name, res, err)
	}
	if code := target.wait(t); code != 0 {
		t.Fatalf("exec agent stopped through %s exited with status %d\n%s", c.name, code, target.stderr.String())
	}
	stopExit := time.Since(t0)
	for _, h := range []*mhHub{leaderHub, b} {
		eventually(t, 10*time.Second, fmt.Sprintf("%s to report %s stopped", h.name, tid), func() (bool, string) {
			ps, err := h.api.ListProcesses(ctx)
			if err != nil {
				return false, err.Error()
			}
			for _, p := range ps {
				if p.InstanceID == tid {
					return p.Status == cks.ProcessStopped, string(p.Status)
				}
			}
			return false, "not listed"
		})
	}
	t.Logf("process stop through %s: the agent's OS process exited %s after the request", c.name, stopExit.Round(time.Millisecond))

	// A sweeper stopped through one hub stops on the others; started
	// through another, it runs again everywhere — on the leader too.
	const sw = sweeper.StaleStopReportID
	runsBefore := leaderHub.sweeper(t, sw).RunCount
	if r := runCKS(t, nil, "sweeper", "stop", sw, "--json", "--data-dir", string(b.dir)); r.code != 0 {
		t.Fatalf("sweeper stop %s through %s: exit %d\n%s", sw, b.name, r.code, r.stderr)
	}
	stopSeen := sweeperSeen(t, []*mhHub{leaderHub, c}, sw, false)
	if r := runCKS(t, nil, "sweeper", "start", sw, "--json", "--data-dir", string(c.dir)); r.code != 0 {
		t.Fatalf("sweeper start %s through %s: exit %d\n%s", sw, c.name, r.code, r.stderr)
	}
	startSeen := sweeperSeen(t, []*mhHub{leaderHub, b}, sw, true)
	eventually(t, 10*time.Second, fmt.Sprintf("a pass of %s on the leader %s after its start through %s", sw, leaderHub.name, c.name), func() (bool, string) {
		st := leaderHub.sweeper(t, sw)
		return st.RunCount > runsBefore, fmt.Sprintf("%d passes, %d before the stop", st.RunCount, runsBefore)
	})
	for _, h := range []*mhHub{b, c} {
		if st := h.sweeper(t, sw); st.RunCount != 0 {
			t.Fatalf("%s is not the leader but ran %d passes of %s after its start", h.name, st.RunCount, sw)
		}
	}
	t.Logf("sweeper %s stopped through %s: seen stopped on %s; started through %s: seen running on %s",
		sw, b.name, stopSeen, c.name, startSeen)

	// Once-ever dedupe of graph_health's findings.
	st, err := backend.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	objs := orphans(t, st, "a", mhOrphans)
	checkEnrichOnce(t, hubs[0], objs)
	runs := leaderHub.sweeper(t, sweeper.GraphHealthID).RunCount
	graphPasses(t, leaderHub, runs, 2, mhOrphans)
	if per, _ := enrichTasks(t, hubs[1]); len(per) != mhOrphans {
		t.Fatalf("%d objects with enrich tasks, want the %d orphans", len(per), mhOrphans)
	}

	// The leader killed: another hub leads within the TTL plus a third,
	// and maintenance resumes there.
	abandoned, _, err := b.api.CreateTask(ctx, cks.NewTask{Type: "abandon", Title: "claimed and abandoned"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := b.api.Claim(ctx, "abandoner", []string{"abandon"}, 1, time.Second)
	if err != nil || len(cl) != 1 || cl[0].Task.ID != abandoned.ID {
		t.Fatalf("claim of the task to abandon: %+v, %v", cl, err)
	}
	logsB, logsC := b.leaderLogs(), c.leaderLogs()
	killed := time.Now()
	leaderHub.kill()
	var next *mhHub
	eventually(t, mhLeaderTTL+mhLeaderTTL/3+mhFailoverSlack, "a surviving hub to log that it leads", func() (bool, string) {
		switch {
		case b.leaderLogs() > logsB:
			next = b
		case c.leaderLogs() > logsC:
			next = c
		}
		return next != nil, "no new leader"
	})
	failover := time.Since(killed)
	other := map[*mhHub]*mhHub{b: c, c: b}[next]
	ni, nextID := agreedLeader(t, []*mhHub{b, c})
	if got := []*mhHub{b, c}[ni]; got != next || nextID == leaderID {
		t.Fatalf("after the kill the survivors agree on %s (%s), but %s logged that it leads; the old leader was %s",
			got.name, nextID, next.name, leaderID)
	}
	checkStandby(t, []*mhHub{next, other}, 0, nextID)
	var reaped cks.TaskEvent
	eventually(t, 10*time.Second, fmt.Sprintf("the abandoned task %d reaped by the new leader", abandoned.ID), func() (bool, string) {
		task, err := next.api.GetTask(ctx, abandoned.ID)
		if err != nil {
			return false, err.Error()
		}
		if task.State != cks.TaskOpen || len(task.Events) == 0 {
			return false, string(task.State)
		}
		reaped = task.Events[len(task.Events)-1]
		return true, ""
	})
	if reaped.Actor != "reaper" || reaped.From != cks.TaskClaimed || !reaped.At.After(killed) {
		t.Fatalf("the abandoned task's last event %+v: want CLAIMED → OPEN by the reaper after the kill at %s", reaped, killed)
	}
	reapedAfter := reaped.At.Sub(killed)
	if st := other.sweeper(t, sweeper.LeaseReaperID); st.RunCount != 0 || !st.Standby {
		t.Fatalf("%s, not the leader, ran %d lease_reaper passes (standby %v)", other.name, st.RunCount, st.Standby)
	}
	if st := next.sweeper(t, sweeper.LeaseReaperID); st.RunCount == 0 || st.Standby {
		t.Fatalf("%s, the new leader, ran no lease_reaper pass (standby %v)", next.name, st.Standby)
	}
	t.Logf("leader %s killed: %s leads %s later (bound: TTL %s + a third); the abandoned claim reaped %s after the kill",
		leaderHub.name, next.name, failover.Round(time.Millisecond), mhLeaderTTL, reapedAfter.Round(time.Millisecond))

	// The dedupe holds on the new leader: its passes find the same orphans
	// and enqueue nothing; new orphans get one task each.
	graphPasses(t, next, 0, 2, mhOrphans)
	more := orphans(t, st, "b", 3)
	checkEnrichOnce(t, next, slices.Concat(objs, more))
	runs = next.sweeper(t, sweeper.GraphHealthID).RunCount
	graphPasses(t, next, runs, 2, mhOrphans+len(more))

	// A non-leader hub killed: the agents' work goes on, through the last hub.
	other.kill()
	ids = loadTasks(t, []*mhHub{next}, "after", mhAfterKill)
	waitCompleted(t, next, "after", mhAfterKill)
	checkOneClaim(t, []*mhHub{next}, ids)
	if hz, err := next.health(); err != nil || hz.Leader == nil || !hz.Leader.ThisHub || hz.Leader.ID != nextID {
		t.Fatalf("%s's /healthz after the other survivor was killed: %+v, %v; want it still the leader", next.name, hz, err)
	}
	for _, a := range slices.Concat(execs[:2], enrichers) {
		if a.exited() {
			t.Fatalf("agent %v exited (status %d) during the hubs' kills\n%s", a.cmd.Args, a.code, a.stderr.String())
		}
	}
	t.Logf("figures: process stop %s; sweeper stop seen %s, start seen %s; %.0f creates/s, %.0f claims/s; failover %s, "+
		"abandoned claim reaped %s after the kill; whole test %s", stopExit.Round(time.Millisecond), stopSeen, startSeen,
		float64(mhLoad)/created.Seconds(), rate, failover.Round(time.Millisecond), reapedAfter.Round(time.Millisecond),
		time.Since(begin).Round(time.Millisecond))
}

// sweeperSeen waits until sweeper id's status reads running (or not) on
// every hub of hubs, polling their APIs, and says how long after the call
// each saw it.
func sweeperSeen(t testing.TB, hubs []*mhHub, id string, running bool) string {
	t.Helper()
	t0 := time.Now()
	seen := make([]time.Duration, len(hubs))
	eventually(t, 10*time.Second, fmt.Sprintf("sweeper %s running=%v on %d other hubs", id, running, len(hubs)), func() (bool, string) {
		done := true
		for i, h := range hubs {
			if seen[i] != 0 {
				continue
			}
			if st := h.sweeper(t, id); st.Running == running {
				seen[i] = cmp.Or(time.Since(t0), time.Nanosecond)
			} else {
				done = false
			}
		}
		return done, fmt.Sprint(seen)
	})
	var parts []string
	for i, h := range hubs {
		parts = append(parts, fmt.Sprintf("%s after %s", h.name, seen[i].Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// pairs lists m as "key=value" strings.
func pairs(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k, v := range m {
			if !yield(fmt.Sprintf("%s=%d", k, v)) {
				return
			}
		}
	}
}
