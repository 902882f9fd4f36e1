package peers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// meterTag marks the meter's own statements so that pg_stat_statements
// figures leave them out.
const meterTag = "/* peers-meter */ "

// meter reads a Postgres server's statistics around a run: one connection
// of its own (application_name peers-meter).
type meter struct {
	conn *pgx.Conn
	// pgss: pg_stat_statements is loaded and installed in the database.
	pgss bool
	// server reads the server's CPU; nil when it is not on this machine.
	server *serverCPU
	// checkpoint: prepare starts with a CHECKPOINT.
	checkpoint bool
}

// snapshot is the cumulative counters at one moment.
type snapshot struct {
	commits, inserted, updated, deleted int64
	walRecords, walBytes, walSyncs      int64
	client, server                      time.Duration
	hasServer                           bool
}

func openMeter(ctx context.Context, dbURL string) (*meter, error) {
	conn, err := pgx.Connect(ctx, withParams(dbURL, map[string]string{"application_name": "peers-meter"}))
	if err != nil {
		return nil, fmt.Errorf("peers: connect the meter: %w", err)
	}
	m := &meter{conn: conn}
	if _, err := conn.Exec(ctx, meterTag+"CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err == nil {
		_, err = conn.Exec(ctx, meterTag+"SELECT pg_stat_statements_reset()")
		m.pgss = err == nil // not in shared_preload_libraries: the view errors
	}
	var pid int
	if err := conn.QueryRow(ctx, meterTag+"SELECT pg_backend_pid()").Scan(&pid); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("peers: meter: %w", err)
	}
	if local(conn.Config().Host) {
		m.server = findServer(pid)
	}
	return m, nil
}

func (m *meter) close(ctx context.Context) { m.conn.Close(ctx) }

// local reports whether host is this machine (a loopback address or a Unix
// socket directory).
func local(host string) bool {
	return strings.HasPrefix(host, "/") || host == "localhost" || strings.HasPrefix(host, "127.") || host == "::1"
}

// version is the server's version string.
func (m *meter) version(ctx context.Context) string {
	var v string
	m.conn.QueryRow(ctx, meterTag+"SHOW server_version").Scan(&v) //nolint:errcheck // empty on error
	return v
}

// settings reads the server settings that decide durability and cost.
func (m *meter) settings(ctx context.Context) map[string]string {
	out := map[string]string{}
	for _, name := range []string{"fsync", "synchronous_commit", "full_page_writes", "wal_sync_method",
		"shared_buffers", "max_wal_size", "checkpoint_timeout", "max_connections"} {
		var v string
		if err := m.conn.QueryRow(ctx, meterTag+"SELECT current_setting($1)", name).Scan(&v); err == nil {
			out[name] = v
		}
	}
	return out
}

// prepare starts a run on an equal footing: a checkpoint (so no run pays
// for the previous one's full-page writes) and reset statement statistics.
// A checkpoint refused for want of privilege is no error.
func (m *meter) prepare(ctx context.Context) error {
	if m.checkpoint {
		m.conn.Exec(ctx, meterTag+"CHECKPOINT") //nolint:errcheck // needs superuser or pg_checkpoint
	}
	if m.pgss {
		if _, err := m.conn.Exec(ctx, meterTag+"SELECT pg_stat_statements_reset()"); err != nil {
			return fmt.Errorf("peers: reset pg_stat_statements: %w", err)
		}
	}
	return nil
}

// read takes the cumulative counters now.
func (m *meter) read(ctx context.Context) (snapshot, error) {
	var s snapshot
	s.client = processCPU()
	if m.server != nil {
		s.server, s.hasServer = m.server.total()
	}
	err := m.conn.QueryRow(ctx, meterTag+`SELECT d.xact_commit, d.tup_inserted, d.tup_updated, d.tup_deleted,
		w.wal_records, w.wal_bytes::bigint, w.wal_sync
		FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = current_database()`).
		Scan(&s.commits, &s.inserted, &s.updated, &s.deleted, &s.walRecords, &s.walBytes, &s.walSyncs)
	if err != nil {
		return s, fmt.Errorf("peers: read server statistics: %w", err)
	}
	return s, nil
}

// cpu reads only the CPU counters: at the end of a run's work, before its
// connections close.
func (m *meter) cpu() snapshot {
	s := snapshot{client: processCPU()}
	if m.server != nil {
		s.server, s.hasServer = m.server.total()
	}
	return s
}

// drained waits until no connection of application app is left: a backend
// hands its statistics to the server as it exits, so they are complete only
// then.
func (m *meter) drained(ctx context.Context, app string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := m.conn.QueryRow(ctx, meterTag+"SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			return fmt.Errorf("peers: wait for %s's connections to close: %w", app, err)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("peers: %d connections of %s still open 30 s after the run", n, app)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// account is the cost between before and after; cpuEnd is the CPU reading
// taken when the work ended (the rest of after is read once the
// connections are closed).
func (m *meter) account(ctx context.Context, before, cpuEnd, after snapshot) (Accounting, error) {
	a := Accounting{
		HasServerStats: true,
		Commits:        after.commits - before.commits,
		RowsWritten:    (after.inserted + after.updated + after.deleted) - (before.inserted + before.updated + before.deleted),
		WALRecords:     after.walRecords - before.walRecords,
		WALBytes:       after.walBytes - before.walBytes,
		WALSyncs:       after.walSyncs - before.walSyncs,
		ClientCPU:      cpuEnd.client - before.client,
		HasServerCPU:   before.hasServer && cpuEnd.hasServer,
	}
	if a.HasServerCPU {
		a.ServerCPU = cpuEnd.server - before.server
	}
	if !m.pgss {
		return a, nil
	}
	where := ` WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%peers-meter%'`
	err := m.conn.QueryRow(ctx, meterTag+`SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(rows), 0)::bigint FROM pg_stat_statements`+where).
		Scan(&a.Statements, &a.StatementRows)
	if err != nil {
		return a, fmt.Errorf("peers: read pg_stat_statements: %w", err)
	}
	a.HasStatements = true
	rows, err := m.conn.Query(ctx, meterTag+`SELECT query, calls, rows, total_exec_time FROM pg_stat_statements`+where+
		` ORDER BY calls DESC, query LIMIT `+fmt.Sprint(topStatements))
	if err != nil {
		return a, fmt.Errorf("peers: read pg_stat_statements: %w", err)
	}
	for rows.Next() {
		var s Statement
		if err := rows.Scan(&s.Query, &s.Calls, &s.Rows, &s.TimeMS); err != nil {
			rows.Close()
			return a, fmt.Errorf("peers: read pg_stat_statements: %w", err)
		}
		s.Query = oneLine(s.Query)
		a.Top = append(a.Top, s)
	}
	return a, rows.Err()
}

// oneLine squeezes whitespace and cuts a statement to a readable length.
func oneLine(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if r := []rune(q); len(r) > 160 {
		q = string(r[:157]) + "…"
	}
	return q
}

// withParams returns dbURL with query parameters set (search_path,
// application_name, …), which pgx passes to the server.
func withParams(dbURL string, params map[string]string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL // pgx reports the malformed URL
	}
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// exec runs one statement on the meter's connection (schema setup and
// checks; tagged, so not counted).
func (m *meter) exec(ctx context.Context, sql string, args ...any) error {
	_, err := m.conn.Exec(ctx, meterTag+sql, args...)
	return err
}

// count runs a count query on the meter's connection.
func (m *meter) count(ctx context.Context, sql string, args ...any) (int64, error) {
	var n int64
	err := m.conn.QueryRow(ctx, meterTag+sql, args...).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return n, err
}
