package studio_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/studio"
)

// boardOpen is how many of a board fixture's tasks, its newest, are OPEN.
const boardOpen = 300

// boardStateOf is the state of task i (1..n) of the board fixture: the
// newest boardOpen OPEN, then of every 80 one STOPPED, one NEEDS_INPUT and
// one FAILED, the rest COMPLETED — an operator's board after months of work.
func boardStateOf(i, n int) cks.TaskState {
	switch {
	case i > n-boardOpen:
		return cks.TaskOpen
	case i%80 == 7:
		return cks.TaskStopped
	case i%80 == 8:
		return cks.TaskNeedsInput
	case i%80 == 9:
		return cks.TaskFailed
	}
	return cks.TaskCompleted
}

// boardSQL writes the fixture (boardStateOf) in one INSERT … SELECT per
// dialect, a second apart from 2026-01-01; %[1]d is n, %[2]d boardOpen.
var boardSQL = map[string]string{
	"sqlite": `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[1]d)
INSERT INTO cks_outbox_tasks (type, title, state, created_at, updated_at, state_changed_at)
SELECT 'bench', 'task ' || i, CASE WHEN i > %[1]d - %[2]d THEN 'OPEN' WHEN i %% 80 = 7 THEN 'STOPPED'
    WHEN i %% 80 = 8 THEN 'NEEDS_INPUT' WHEN i %% 80 = 9 THEN 'FAILED' ELSE 'COMPLETED' END, t, t, t
FROM (SELECT i, strftime('%%Y-%%m-%%dT%%H:%%M:%%S', '2026-01-01', '+' || i || ' seconds') || '.000000000Z' AS t FROM n)`,
	"postgres": `INSERT INTO cks_outbox_tasks (type, title, state, created_at, updated_at, state_changed_at)
SELECT 'bench', 'task ' || i, CASE WHEN i > %[1]d - %[2]d THEN 'OPEN' WHEN i %% 80 = 7 THEN 'STOPPED'
    WHEN i %% 80 = 8 THEN 'NEEDS_INPUT' WHEN i %% 80 = 9 THEN 'FAILED' ELSE 'COMPLETED' END, t, t, t
FROM (SELECT i, timestamptz '2026-01-01Z' + i * interval '1 second' AS t FROM generate_series(1, %[1]d) i) s`,
}

// boardStore opens a store of backend be on a fresh database holding the
// board fixture of n tasks, VACUUMed and ANALYZEd as an operator's
// database is by then (Postgres's autovacuum; SQLite's optimize), and a
// studio handler over it whose clock is a fake just after the fixture.
func boardStore(tb testing.TB, be backendtest.Backend, n int) (*backend.Backend, http.Handler) {
	tb.Helper()
	var url string
	if be.Name == "sqlite" {
		url = filepath.Join(tb.TempDir(), "cks.db")
	} else {
		url = backendtest.PostgresURL(tb)
	}
	c := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n+3600) * time.Second))
	s, err := backend.Open(context.Background(), url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	t0 := time.Now()
	stmts := []string{fmt.Sprintf(boardSQL[be.Name], n, boardOpen), "ANALYZE"}
	if be.Name == "postgres" {
		stmts = append(stmts, "VACUUM cks_outbox_tasks")
	}
	backendtest.ExecSQL(tb, be.Name, url, stmts...)
	tb.Logf("%s: seeded %d tasks in %v", be.Name, n, time.Since(t0).Round(time.Millisecond))
	h := studio.New(&ops.Services{Liveness: liveness.NewService(s.Driver(), c), Sweepers: s.Sweepers, Tasks: s.Tasks, Clock: c},
		studio.Options{Version: "v-test"})
	return s, h
}

var (
	chipCount = regexp.MustCompile(`href="/tasks\?state=([A-Z_]+)"[^>]*>[A-Z_]+ <span class="chip__n">(\d+)</span>`)
	taskRow   = regexp.MustCompile(`data-task-row="\d+"`)
)

// TestBoardBoundedAtScale (both backends): the board over 20,000 tasks —
// 250 STOPPED, 250 NEEDS_INPUT, 300 OPEN, most COMPLETED — is one page of
// at most BoardCap rows per section (the STOPPED and the live ones cut
// short with a link to the rest), and its chips count every task of each
// state.
func TestBoardBoundedAtScale(t *testing.T) {
	const n = 20_000
	want := map[cks.TaskState]int{}
	for i := 1; i <= n; i++ {
		want[boardStateOf(i, n)]++
	}
	for _, be := range backendtest.All() {
		t.Run(be.Name, func(t *testing.T) {
			if be.Name == "postgres" && os.Getenv("CKS_TEST_DATABASE_URL") == "" {
				t.Skip("no CKS_TEST_DATABASE_URL (scripts/with-postgres sets it)")
			}
			_, h := boardStore(t, be, n)
			page := get(t, h, studio.TasksPath)
			wantHTML(t, page, http.StatusOK)
			got := map[cks.TaskState]int{}
			for _, m := range chipCount.FindAllStringSubmatch(page.body, -1) {
				c, _ := strconv.Atoi(m[2])
				got[cks.TaskState(m[1])] = c
			}
			for st, w := range want {
				if got[st] != w {
					t.Errorf("chip %s = %d, want %d", st, got[st], w)
				}
			}
			rows := len(taskRow.FindAllString(page.body, -1))
			// STOPPED (capped), NEEDS_INPUT (capped), the OPEN ones (capped).
			if max := 3 * studio.BoardCap; rows > max || rows < studio.BoardCap {
				t.Errorf("%d rows, want %d..%d", rows, studio.BoardCap, max)
			}
			mustContain(t, "board", page.body,
				fmt.Sprintf(`Stopped <span class="count">%d</span>`, want[cks.TaskStopped]),
				fmt.Sprintf("Showing the first %d of %d", studio.BoardCap, want[cks.TaskOpen]),
				`href="/tasks?state=STOPPED"`)
		})
	}
}

// boardSizes are the board fixtures BenchmarkBoard measures:
// CKS_BENCH_BOARD_TASKS (comma-separated), default 100,000 and a million.
func boardSizes(b *testing.B) []int {
	v := os.Getenv("CKS_BENCH_BOARD_TASKS")
	if v == "" {
		return []int{100_000, 1_000_000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n <= boardOpen {
			b.Fatalf("CKS_BENCH_BOARD_TASKS=%q", v)
		}
		out = append(out, n)
	}
	return out
}

// BenchmarkBoard: the studio's board page (GET /tasks through the studio
// handler, as the signed-in operator) and count_tasks by state, over the
// board fixture of 100k and 1M tasks (CKS_BENCH_BOARD_TASKS) on each
// backend. It runs only with -bench; seeding a million tasks takes a
// minute or two.
func BenchmarkBoard(b *testing.B) {
	for _, n := range boardSizes(b) {
		for _, be := range backendtest.All() {
			b.Run(fmt.Sprintf("%s/%d", be.Name, n), func(b *testing.B) {
				if be.Name == "postgres" && os.Getenv("CKS_TEST_DATABASE_URL") == "" {
					b.Skip("no CKS_TEST_DATABASE_URL (scripts/with-postgres sets it)")
				}
				s, h := boardStore(b, be, n)
				b.Run("board_page", func(b *testing.B) {
					for b.Loop() {
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, asOperator(httptest.NewRequest(http.MethodGet, studio.TasksPath, nil)))
						if rec.Code != http.StatusOK {
							b.Fatalf("GET /tasks: %d\n%s", rec.Code, rec.Body)
						}
					}
				})
				b.Run("count_tasks_by_state", func(b *testing.B) {
					for b.Loop() {
						c, err := s.Tasks.CountTasksByState(context.Background(), cks.TaskFilter{})
						if err != nil || c.Total != n {
							b.Fatalf("%d tasks, %v; want %d", c.Total, err, n)
						}
					}
				})
				b.Run("count_tasks_by_state_q", func(b *testing.B) {
					for b.Loop() {
						if _, err := s.Tasks.CountTasksByState(context.Background(), cks.TaskFilter{Text: "task 12"}); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		}
	}
}
