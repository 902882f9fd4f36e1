package peers

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestBenchSmallRun runs every system once with a few jobs: on SQLite
// always, on Postgres when CKS_TEST_DATABASE_URL names a database (each run
// in a schema of its own, dropped after it).
func TestBenchSmallRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs River and cks against real databases")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db := os.Getenv("CKS_TEST_DATABASE_URL")
	if db == "" {
		t.Log("CKS_TEST_DATABASE_URL is unset: SQLite only")
	}
	const jobs = 200
	const retained = 300
	cfg := Config{Database: db, Rounds: 1, Jobs: jobs, RiverWorkers: []int{10}, CksWorkers: []int{2}, AgentWorkers: []int{2},
		HTTPWorkers: []int{2}, MCPWorkers: []int{3}, Retained: retained,
		LatencySamples: 5, LatencyGap: time.Millisecond, LatencyRiverWorkers: 2, LatencyCksWorkers: 2,
		SQLite: true, SQLiteDir: t.TempDir(), SQLiteRiverWorkers: []int{10}, SQLiteCksWorkers: []int{1}, SQLiteAgentWorkers: []int{2},
		NoCheckpoint: true, Timeout: 2 * time.Minute, Progress: func(line string) { t.Log(line) }}
	rep, err := Bench(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	check := func(runs []Run, systems ...string) {
		t.Helper()
		if len(runs) != len(systems) {
			t.Fatalf("%d runs, want %d (%v)", len(runs), len(systems), systems)
		}
		for i, r := range runs {
			if r.System != systems[i] || r.Jobs != jobs || r.JobsPerSecond <= 0 || r.WorkSeconds <= 0 || r.Acct.ClientCPU <= 0 {
				t.Errorf("run %d = %+v, want %s with %d jobs, a rate and client CPU", i, r, systems[i], jobs)
			}
		}
	}
	check(rep.SQLite, SystemSQLiteCeiling, SystemRiver, SystemCks, SystemCksAgent)
	if db == "" {
		return
	}
	check(rep.Postgres, SystemRiver, SystemCks, SystemCksAgent, SystemCksHTTP, SystemCksMCP)
	// The retained runs: each system once more, with the retained jobs
	// loaded (and counted by the harness) first.
	check(rep.Retained, SystemRiver, SystemCks, SystemCksAgent, SystemCksHTTP, SystemCksMCP)
	for _, r := range rep.Retained {
		if r.Retained != retained || r.LoadSeconds <= 0 {
			t.Errorf("%s: retained %d loaded in %v s, want %d", r.Label(), r.Retained, r.LoadSeconds, retained)
		}
	}
	for _, r := range append(rep.Postgres, rep.Retained...) {
		a := r.Acct
		if !a.HasServerStats || a.RowsWritten < jobs || a.WALBytes <= 0 {
			t.Errorf("%s: accounting %+v; want at least a row written per job and WAL", r.Label(), a)
		}
		// The claims alone commit once per batch of 10 (claim→complete) or
		// once per task (the agent path claims one at a time); enqueues
		// (EnqueueMany) and completions (the completer) share commits.
		least := int64(jobs / 10)
		switch r.System {
		case SystemCksAgent:
			least = jobs
		case SystemCksHTTP, SystemCksMCP:
			// Through the hub: the claim (straight into RUNNING) and the
			// completion each commit (and each request authenticates).
			least = 2 * jobs
		}
		if r.System != SystemRiver && a.Commits < least {
			t.Errorf("%s: %d commits for %d tasks, want at least %d", r.Label(), a.Commits, jobs, least)
		}
		if a.HasStatements && a.Statements < a.Commits/2 {
			t.Errorf("%s: %d statements for %d commits", r.Label(), a.Statements, a.Commits)
		}
	}
	if len(rep.Latency) != 4 {
		t.Fatalf("%d latency rows, want 4", len(rep.Latency))
	}
	for _, l := range rep.Latency {
		if l.Samples != 5 || l.StartP50 <= 0 || l.StartMax < l.StartP50 || l.ClaimMax < l.ClaimP50 {
			t.Errorf("%s: %+v; want 5 samples with ordered percentiles", l.Label(), l)
		}
	}
}
