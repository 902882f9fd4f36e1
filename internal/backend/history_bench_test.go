package backend_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// historyRows is the size of the history the History benchmarks seed:
// CKS_BENCH_HISTORY_ROWS, default a million.
func historyRows(b *testing.B) int {
	if v := os.Getenv("CKS_BENCH_HISTORY_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("CKS_BENCH_HISTORY_ROWS=%q", v)
		}
		return n
	}
	return 1_000_000
}

// The fixtures, per dialect: n exited liveness instances of the five
// kinds, a second apart from 2026-01-01, and n COMPLETED tasks, written by
// one INSERT … SELECT each (seconds, where the services would take hours).
var historySQL = map[string][2]string{
	"sqlite": {`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[1]d)
INSERT INTO cks_agent_liveness (instance_id, process_kind, hostname, pid, liveness_interval_s, started_at, last_heartbeat_at, exited_at)
SELECT printf('hist-%%08d', i), CASE i %% 5 WHEN 0 THEN 'critic' WHEN 1 THEN 'enrichment' WHEN 2 THEN 'exec' WHEN 3 THEN 'fork_resolution' ELSE 'pipeline' END,
    'h', i, 30, strftime('%%Y-%%m-%%dT%%H:%%M:%%S', '2026-01-01', '+' || i || ' seconds') || '.000000000Z',
    strftime('%%Y-%%m-%%dT%%H:%%M:%%S', '2026-01-01', '+' || (i + 60) || ' seconds') || '.000000000Z',
    strftime('%%Y-%%m-%%dT%%H:%%M:%%S', '2026-01-01', '+' || (i + 60) || ' seconds') || '.000000000Z'
FROM n`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[1]d)
INSERT INTO cks_outbox_tasks (type, state, created_at, updated_at, state_changed_at)
SELECT 'bench', 'COMPLETED', t, t, t FROM (SELECT strftime('%%Y-%%m-%%dT%%H:%%M:%%S', '2026-01-01', '+' || i || ' seconds') || '.000000000Z' AS t FROM n)`},
	"postgres": {`INSERT INTO cks_agent_liveness (instance_id, process_kind, hostname, pid, liveness_interval_s, started_at, last_heartbeat_at, exited_at)
SELECT 'hist-' || lpad(i::text, 8, '0'), (ARRAY['critic', 'enrichment', 'exec', 'fork_resolution', 'pipeline'])[i %% 5 + 1],
    'h', i, 30, timestamptz '2026-01-01Z' + i * interval '1 second', timestamptz '2026-01-01Z' + (i + 60) * interval '1 second',
    timestamptz '2026-01-01Z' + (i + 60) * interval '1 second'
FROM generate_series(1, %[1]d) i`,
		`INSERT INTO cks_outbox_tasks (type, state, created_at, updated_at, state_changed_at)
SELECT 'bench', 'COMPLETED', t, t, t FROM (SELECT timestamptz '2026-01-01Z' + i * interval '1 second' AS t FROM generate_series(1, %[1]d) i) s`},
}

// seedHistory opens a store of backend be on a fresh database with the
// history fixture, then ANALYZEs it as an operator's database would be.
func seedHistory(b *testing.B, be backendtest.Backend, n int) *backend.Backend {
	b.Helper()
	var url string
	if be.Name == "sqlite" {
		url = b.TempDir() + "/cks.db"
	} else {
		url = backendtest.PostgresURL(b)
	}
	s, err := backend.Open(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	t0 := time.Now()
	stmts := []string{fmt.Sprintf(historySQL[be.Name][0], n), fmt.Sprintf(historySQL[be.Name][1], n), "ANALYZE"}
	backendtest.ExecSQL(b, be.Name, url, stmts...)
	b.Logf("%s: seeded %d liveness rows and %d tasks in %v", be.Name, n, n, time.Since(t0).Round(time.Millisecond))
	// The live fleet: two alive instances of each kind, a COMPLETED and an
	// OPEN task of today.
	now := time.Now()
	for _, k := range []string{"critic", "enrichment", "exec", "fork_resolution", "pipeline"} {
		for i := range 2 {
			r := cks.AgentLiveness{InstanceID: fmt.Sprintf("live-%s-%d", k, i), ProcessKind: k, Hostname: "h", PID: 1 + i,
				LivenessIntervalS: 30, StartedAt: now.Add(-time.Duration(i) * time.Minute), LastHeartbeatAt: now}
			backendtest.MustUpsert(b, s, r)
		}
	}
	if _, _, err := s.Tasks.Enqueue(backendtest.Ctx(b), cks.NewTask{Type: "bench"}); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkHistory: list_processes (its default view, and a page deep in
// the history) and the board's list_tasks default page over a history of
// a million rows (CKS_BENCH_HISTORY_ROWS) on each backend. Seeding takes
// seconds (SQLite) to a minute (Postgres); it runs only with -bench.
func BenchmarkHistory(b *testing.B) {
	n := historyRows(b)
	for _, be := range backendtest.All() {
		b.Run(be.Name, func(b *testing.B) {
			if be.Name == "postgres" && os.Getenv("CKS_TEST_DATABASE_URL") == "" {
				b.Skip("no CKS_TEST_DATABASE_URL (scripts/with-postgres sets it)")
			}
			s := seedHistory(b, be, n)
			ctx := context.Background()
			// A cursor half-way down the history.
			deep := cks.ProcessCursor{StartedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n/2) * time.Second),
				InstanceID: fmt.Sprintf("hist-%08d", n/2)}.String()
			for _, c := range []struct {
				name string
				in   cks.ListProcessesInput
				want int
			}{
				{"list_processes/default", cks.ListProcessesInput{}, 10},
				{"list_processes/alive", cks.ListProcessesInput{Alive: new(true)}, 10},
				{"list_processes/history_first_page", cks.ListProcessesInput{History: true}, 100},
				{"list_processes/history_deep_page", cks.ListProcessesInput{History: true, Cursor: deep}, 100},
				{"list_processes/history_kind_deep_page", cks.ListProcessesInput{History: true, Kind: cks.Names{"exec"}, Cursor: deep}, 100},
			} {
				b.Run(c.name, func(b *testing.B) {
					for b.Loop() {
						page, err := s.Liveness.Page(ctx, c.in)
						if err != nil || len(page.Processes) != c.want {
							b.Fatalf("%d rows, %v; want %d", len(page.Processes), err, c.want)
						}
					}
				})
			}
			// What list_processes answered before it paged: every row.
			b.Run("list_processes/every_row_as_before", func(b *testing.B) {
				for b.Loop() {
					ps, err := s.Liveness.ListProcesses(ctx)
					if err != nil || len(ps) != n+10 {
						b.Fatalf("%d rows, %v", len(ps), err)
					}
				}
			})
			b.Run("list_tasks/default_page", func(b *testing.B) {
				for b.Loop() {
					page, err := s.Tasks.ListTasks(ctx, cks.TaskFilter{})
					if err != nil || len(page.Tasks) != cks.DefaultListLimit {
						b.Fatalf("%d tasks, %v", len(page.Tasks), err)
					}
				}
			})
			// The board's "recently changed" order (issue 38.9: 1.8 s over
			// 50,000 tasks on SQLite when it sorted the table).
			for _, sort := range []cks.TaskSort{cks.TaskSortUpdatedDesc, cks.TaskSortUpdated} {
				b.Run("list_tasks/sort_"+string(sort), func(b *testing.B) {
					for b.Loop() {
						page, err := s.Tasks.ListTasks(ctx, cks.TaskFilter{Sort: sort})
						if err != nil || len(page.Tasks) != cks.DefaultListLimit {
							b.Fatalf("%d tasks, %v", len(page.Tasks), err)
						}
					}
				})
			}
			b.Run("list_tasks/stopped_first_page", func(b *testing.B) {
				for b.Loop() {
					page, err := ledger.ListInOrder(ctx, s.Tasks, cks.TaskFilter{}, cks.TaskOrderStoppedFirst)
					if err != nil || len(page.Tasks) != cks.DefaultListLimit {
						b.Fatalf("%d tasks, %v", len(page.Tasks), err)
					}
				}
			})
			b.Run("count_tasks/by_state", func(b *testing.B) {
				for b.Loop() {
					if _, err := s.Tasks.CountTasksByState(ctx, cks.TaskFilter{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
