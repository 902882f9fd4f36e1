package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/postgres"
	"github.com/cks-dev/cks/store/storetest"
	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// baseURL returns CKS_TEST_DATABASE_URL or skips the test; under CI=true a
// missing URL fails instead, so CI can never silently test only SQLite.
func baseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("CKS_TEST_DATABASE_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CKS_TEST_DATABASE_URL not set but CI=true: the Postgres tests must run in CI (use scripts/test)")
		}
		t.Skip("CKS_TEST_DATABASE_URL not set: Postgres tests skipped")
	}
	return u
}

func testCtx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// admin runs sql on a fresh connection to the base database.
func admin(t testing.TB, base, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("admin connection: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("admin %q: %v", sql, err)
	}
}

// freshSchema creates an empty schema cks_test_<random>, drops it (with
// everything in it) when t ends, and returns its name and a database URL whose
// search_path points at it.
func freshSchema(t testing.TB) (schema, dbURL string) {
	t.Helper()
	base := baseURL(t)
	b := make([]byte, 8)
	rand.Read(b)
	schema = "cks_test_" + hex.EncodeToString(b)
	admin(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { admin(t, base, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	return schema, withSearchPath(t, base, schema)
}

func withSearchPath(t testing.TB, base, schema string) string {
	t.Helper()
	if !strings.Contains(base, "://") { // keyword/value form: host=… dbname=…
		return base + " search_path=" + schema
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("CKS_TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func open(t testing.TB, dbURL string, opts ...store.Option) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(testCtx(t), dbURL, opts...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	baseURL(t)
	storetest.Run(t, func(t testing.TB) storetest.Opener {
		_, u := freshSchema(t)
		return func(t testing.TB, opts ...store.Option) store.Store {
			s := open(t, u, opts...)
			if s.Backend() != "postgres" {
				t.Fatalf("Backend() = %q", s.Backend())
			}
			return s
		}
	}, storetest.Skip("VersionNumbersPerObject")) // numbered across objects; knowledge.Service replaces it
}

// TestUpgradesOlderSchema opens a schema whose cks_agent_liveness predates the
// current_task_* columns and finds them added, with the old rows intact.
func TestUpgradesOlderSchema(t *testing.T) {
	schema, u := freshSchema(t)
	admin(t, baseURL(t), `CREATE TABLE `+schema+`.cks_agent_liveness (
		instance_id TEXT PRIMARY KEY, process_kind TEXT NOT NULL, hostname TEXT NOT NULL,
		pid INTEGER NOT NULL, liveness_interval_s DOUBLE PRECISION NOT NULL,
		started_at TIMESTAMPTZ NOT NULL, last_heartbeat_at TIMESTAMPTZ NOT NULL);
	INSERT INTO `+schema+`.cks_agent_liveness VALUES
		('old-1', 'critic', 'h', 10, 30, '2026-11-30T12:00:00Z', '2026-11-30T12:00:30Z'),
		('old-2', 'pipeline', 'h', 11, 15, '2026-11-30T12:01:00Z', '2026-11-30T12:01:00Z');`)
	s := open(t, u)
	storetest.CheckUpgradedLiveness(t, s)
	checkShape(t, u)
}

// checkShape checks the Postgres column types and the ADR-014 index.
func checkShape(t *testing.T, dbURL string) {
	t.Helper()
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT column_name || ' ' || data_type FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = 'cks_agent_liveness' ORDER BY ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := "instance_id text, process_kind text, hostname text, pid integer, " +
		"liveness_interval_s double precision, started_at timestamp with time zone, " +
		"last_heartbeat_at timestamp with time zone, current_task_id bigint, current_task_type text, desired_state text"
	if got := strings.Join(cols, ", "); got != want {
		t.Errorf("cks_agent_liveness columns:\n got: %s\nwant: %s", got, want)
	}
	var def string
	err = conn.QueryRow(ctx, `SELECT indexdef FROM pg_indexes
WHERE schemaname = current_schema() AND indexname = 'idx_agent_liveness_kind'`).Scan(&def)
	if err != nil {
		t.Fatalf("idx_agent_liveness_kind: %v", err)
	}
	if !strings.Contains(def, "(process_kind, last_heartbeat_at)") {
		t.Errorf("idx_agent_liveness_kind = %s, want it on (process_kind, last_heartbeat_at)", def)
	}
}

// TestConcurrentOpen opens one empty schema from many stores at once, as several
// hubs starting together would: the advisory lock must serialise the schema step.
func TestConcurrentOpen(t *testing.T) {
	_, u := freshSchema(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	stores := make([]*postgres.Store, n)
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = postgres.Open(testCtx(t), u) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("open %d: %v", i, errs[i])
		} else {
			stores[i].Close()
		}
	}
	s := open(t, u) // and once more on the finished schema
	storetest.MustUpsert(t, s, storetest.Liveness("i-1", "critic", 0))
	checkShape(t, u)
}

func TestOpenUnreachable(t *testing.T) {
	start := time.Now()
	_, err := postgres.Open(context.Background(), "postgres://postgres@127.0.0.1:1/x?sslmode=disable")
	if err == nil {
		t.Fatal("open of 127.0.0.1:1 succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "cannot reach 127.0.0.1:1") || strings.Contains(msg, "\n") {
		t.Fatalf("err = %q, want one line naming 127.0.0.1:1", msg)
	}
	if d := time.Since(start); d > postgres.ConnectTimeout+time.Second {
		t.Fatalf("refused connection took %v", d)
	}
	t.Logf("error: %s", msg)
}

// TestOpenHonoursShortContext points Open at a server that accepts the TCP
// connection and never answers: Open must give up when the caller's context
// ends, with one line naming the address.
func TestOpenHonoursShortContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	defer func() {
		ln.Close()
		<-done
		for _, c := range held {
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = postgres.Open(ctx, "postgres://postgres@"+addr+"/x?sslmode=disable")
	if err == nil {
		t.Fatal("open of a silent server succeeded")
	}
	if !strings.Contains(err.Error(), "cannot reach "+addr) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %q, want one line naming %s", err, addr)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("open took %v with a 300ms context", d)
	}
	t.Logf("error: %s", err)
}

func TestOpenMalformedURL(t *testing.T) {
	for _, u := range []string{"postgres://u@host:notaport/db", "postgres://u:secret@[::1/db"} {
		_, err := postgres.Open(context.Background(), u)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "malformed database URL") {
			t.Errorf("Open(%q) = %v, want a malformed-URL ErrInvalid", u, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error leaks the password: %v", err)
		}
	}
}

func TestOpenMissingSchema(t *testing.T) {
	_, err := postgres.Open(testCtx(t), withSearchPath(t, baseURL(t), "cks_test_does_not_exist"))
	if err == nil || !strings.Contains(err.Error(), "search_path") {
		t.Fatalf("open with a search_path naming no schema: err = %v, want a search_path error", err)
	}
}
