package backend_test

// Facts of each dialect's database under the services: what the rows or
// the file hold after the services wrote them, read outside the driver
// with SQL of the dialect's own (moved here from the drivers' store_test.go
// and events_test.go: the drivers' tests use only the driver).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// sqliteFile is a fresh SQLite database file's path, in t's temp directory.
func sqliteFile(t testing.TB) string { return filepath.Join(t.TempDir(), "cks.db") }

// sqliteDB opens the SQLite file at path outside the driver (waiting for
// its writer's locks), closed when t ends.
func sqliteDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// pgConn opens a connection to the Postgres database at url outside the
// driver, closed when t ends.
func pgConn(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(backendtest.Ctx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// orphanEvents counts the events of no task.
const orphanEvents = `SELECT count(*) FROM cks_task_events e
	WHERE NOT EXISTS (SELECT 1 FROM cks_outbox_tasks t WHERE t.task_id = e.task_id)`

// TestEventsHaveTheirTasks is what stands in for the foreign key
// cks_task_events no longer has (issue 14): after a concurrent mixed load
// on the ledger — enqueues (some with a dependency or a parent), claims,
// completions, retryable and final failures, cancellations, and reclaims
// of expired leases — every event's task exists (orphans, a raw count of
// the dialect's own database, is 0), and every task has at least its
// creation event. The ledger is the one writer of events, each for a task
// it inserted or locked in the same transaction; no path deletes a task.
func TestEventsHaveTheirTasks(t *testing.T) {
	for _, c := range []struct {
		name    string
		db      func(t testing.TB) string // a fresh database's URL
		orphans func(t testing.TB, url string) int
	}{
		{"sqlite", sqliteFile, func(t testing.TB, path string) int {
			var n int
			if err := sqliteDB(t, path).QueryRow(orphanEvents).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}},
		{"postgres", backendtest.PostgresURL, func(t testing.TB, url string) int {
			var n int
			if err := pgConn(t, url).QueryRow(backendtest.Ctx(t), orphanEvents).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := c.db(t)
			s := opener(url)(t).Tasks
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			const workers, rounds = 4, 25
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Go(func() { errs <- eventLoad(ctx, s, fmt.Sprintf("w%d", w), rounds) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			// What is still leased is reclaimed once more (expired by the
			// clock an hour ahead), after the load.
			if _, err := s.ReclaimExpired(ctx, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if n := c.orphans(t, url); n != 0 {
				t.Fatalf("%d events of no task", n)
			}
			page, err := s.ListTasks(ctx, cks.TaskFilter{Limit: cks.MaxListLimit})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Tasks) < workers*rounds {
				t.Fatalf("%d tasks, want at least %d", len(page.Tasks), workers*rounds)
			}
			for _, task := range page.Tasks {
				full, err := s.GetTask(ctx, task.ID)
				if err != nil {
					t.Fatal(err)
				}
				if evs := full.Events; len(evs) == 0 || evs[0].From != "" {
					t.Errorf("task %d (%s): events %+v, want its creation first", task.ID, task.State, full.Events)
				}
			}
		})
	}
}

// eventLoad is one worker of TestEventsHaveTheirTasks: each round enqueues
// three tasks (one depending on the first, one its child), claims, and
// ends what it claimed by completing, failing or abandoning it, cancels
// the dependant now and then, and reclaims expired leases.
func eventLoad(ctx context.Context, s *ledger.Service, worker string, rounds int) error {
	tolerated := func(err error) bool {
		return err == nil || errors.Is(err, cks.ErrConflict) || errors.Is(err, cks.ErrLeaseLost) ||
			errors.Is(err, cks.ErrNotFound)
	}
	for r := range rounds {
		first, _, err := s.Enqueue(ctx, cks.NewTask{Type: "load", CreatedBy: worker, MaxAttempts: 2})
		if err != nil {
			return err
		}
		dep, _, err := s.Enqueue(ctx, cks.NewTask{Type: "load", CreatedBy: worker, DependsOn: []int64{first.ID}})
		if err != nil {
			return err
		}
		if _, _, err := s.Enqueue(ctx, cks.NewTask{Type: "load", CreatedBy: worker, ParentID: &first.ID}); err != nil {
			return err
		}
		if r%4 == 3 {
			if _, err := s.Cancel(ctx, dep.ID, worker, "load"); !tolerated(err) {
				return err
			}
		}
		claimed, err := s.Claim(ctx, ledger.ClaimParams{Worker: worker, N: 3, Lease: time.Minute})
		if err != nil {
			return err
		}
		for i, c := range claimed {
			switch (r + i) % 5 {
			case 0, 1:
				_, err = s.Complete(ctx, c.Task.ID, c.LeaseToken, false, "ok")
			case 2:
				_, err = s.Fail(ctx, c.Task.ID, c.LeaseToken, true, "retry")
			case 3:
				_, err = s.Fail(ctx, c.Task.ID, c.LeaseToken, false, "final")
			default:
				// Abandoned: the reaper reclaims it below.
			}
			if !tolerated(err) {
				return err
			}
		}
		if r%5 == 4 {
			if _, err := s.ReclaimExpired(ctx, time.Now().Add(time.Hour)); err != nil {
				return err
			}
		}
	}
	return nil
}

// leases gives a task of s two leases — the first aborted by a stop, the
// second live — and returns both claims.
func leases(t *testing.T, s *backend.Backend) (aborted, live cks.ClaimedTask) {
	t.Helper()
	ctx := backendtest.Ctx(t)
	backendtest.MustEnqueue(t, s, cks.NewTask{Type: "t"})
	aborted = backendtest.MustClaimOne(t, s, "w1")
	if _, err := s.Tasks.StopTask(ctx, ledger.StopParams{ID: aborted.ID, Actor: "op", Reason: "hold"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tasks.Start(ctx, aborted.ID, "op", ""); err != nil {
		t.Fatal(err)
	}
	return aborted, backendtest.MustClaimOne(t, s, "w2")
}

// TestLeaseTokensStoredHashed: no row of the database holds a plain lease
// token — not of a live lease, not of an aborted one — only its hash.
func TestLeaseTokensStoredHashed(t *testing.T) {
	// SQLite: the database file (and its WAL) holds neither token, and
	// both hashes.
	t.Run("sqlite", func(t *testing.T) {
		path := sqliteFile(t)
		first, second := leases(t, opener(path)(t))
		var content strings.Builder
		for _, f := range []string{path, path + "-wal"} {
			b, err := os.ReadFile(f)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			content.Write(b)
		}
		for _, tok := range []string{first.LeaseToken, second.LeaseToken} {
			if strings.Contains(content.String(), tok) {
				t.Fatalf("the database holds the plain lease token %s", tok)
			}
		}
		if !strings.Contains(content.String(), driver.HashLeaseToken(second.LeaseToken)) {
			t.Fatal("the database does not hold the hash of the live lease's token")
		}
		if !strings.Contains(content.String(), driver.HashLeaseToken(first.LeaseToken)) {
			t.Fatal("the database does not hold the hash of the aborted lease's token")
		}
	})
	// Postgres: no row of the task tables holds a token, one its hash.
	t.Run("postgres", func(t *testing.T) {
		u := backendtest.PostgresURL(t)
		first, second := leases(t, opener(u)(t))
		ctx := backendtest.Ctx(t)
		conn := pgConn(t, u)
		count := func(text string) int {
			t.Helper()
			var n int
			if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM cks_outbox_tasks r WHERE r::text LIKE '%' || $1 || '%')
	+ (SELECT count(*) FROM cks_task_aborts r WHERE r::text LIKE '%' || $1 || '%')
	+ (SELECT count(*) FROM cks_task_events r WHERE r::text LIKE '%' || $1 || '%')`, text).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		for _, tok := range []string{first.LeaseToken, second.LeaseToken} {
			if n := count(tok); n != 0 {
				t.Fatalf("%d rows hold the plain lease token %s", n, tok)
			}
			if n := count(driver.HashLeaseToken(tok)); n != 1 {
				t.Fatalf("%d rows hold the hash of lease token %s, want 1", n, tok)
			}
		}
	})
}

// TestSweeperControlShape checks cks_sweeper_control against ADR-015 and the
// stored updated_at (the services' clock).
func TestSweeperControlShape(t *testing.T) {
	// SQLite: updated_at fixed-width, and the cks_changes counter a write
	// bumps.
	t.Run("sqlite", func(t *testing.T) {
		path := sqliteFile(t)
		s := opener(path)(t, driver.WithClock(clock.NewFake(backendtest.T0)))
		for _, running := range []bool{false, true} {
			if err := s.Sweepers.SetSweeperDesiredRunning(context.Background(), "graph_health", running); err != nil {
				t.Fatal(err)
			}
		}
		db := sqliteDB(t, path)
		rows, err := db.Query(`SELECT name || ' ' || type || ' notnull=' || "notnull" || ' pk=' || pk
FROM pragma_table_info('cks_sweeper_control') ORDER BY cid`)
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			cols = append(cols, c)
		}
		rows.Close()
		want := "agent_id TEXT notnull=0 pk=1, desired_running BOOLEAN notnull=1 pk=0, updated_at TEXT notnull=1 pk=0"
		if got := strings.Join(cols, ", "); got != want {
			t.Errorf("cks_sweeper_control columns:\n got: %s\nwant: %s", got, want)
		}
		var (
			running bool
			updated string
			seq     int
		)
		if err := db.QueryRow(`SELECT desired_running, updated_at FROM cks_sweeper_control WHERE agent_id = 'graph_health'`).Scan(&running, &updated); err != nil {
			t.Fatal(err)
		}
		if !running || updated != "2026-11-30T12:00:00.000000000Z" {
			t.Errorf("row = %v, %q; want true, 2026-11-30T12:00:00.000000000Z", running, updated)
		}
		if err := db.QueryRow(`SELECT seq FROM cks_changes WHERE topic = ?`, cks.TopicSweeperControl).Scan(&seq); err != nil || seq != 2 {
			t.Errorf("cks_changes seq of %s = %d, %v; want 2 (one per write)", cks.TopicSweeperControl, seq, err)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		u := backendtest.PostgresURL(t)
		s := opener(u)(t, driver.WithClock(clock.NewFake(backendtest.T0)))
		if err := s.Sweepers.SetSweeperDesiredRunning(backendtest.Ctx(t), "graph_health", false); err != nil {
			t.Fatal(err)
		}
		ctx := backendtest.Ctx(t)
		conn := pgConn(t, u)
		rows, err := conn.Query(ctx, `SELECT column_name || ' ' || data_type || ' ' || is_nullable FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = 'cks_sweeper_control' ORDER BY ordinal_position`)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		want := "agent_id text NO, desired_running boolean NO, updated_at timestamp with time zone NO"
		if got := strings.Join(cols, ", "); got != want {
			t.Errorf("cks_sweeper_control columns:\n got: %s\nwant: %s", got, want)
		}
		var (
			running bool
			updated time.Time
		)
		if err := conn.QueryRow(ctx, `SELECT desired_running, updated_at FROM cks_sweeper_control
WHERE agent_id = 'graph_health'`).Scan(&running, &updated); err != nil {
			t.Fatal(err)
		}
		if running || !updated.Equal(backendtest.T0) {
			t.Errorf("row = %v, %v; want false, %v", running, updated, backendtest.T0)
		}
	})
}
