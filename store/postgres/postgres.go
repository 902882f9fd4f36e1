// Package postgres is the multi-node Postgres backend of cks, built on a pgx v5
// connection pool. It stores the same tables and columns as store/sqlite, with
// Postgres types (timestamptz for timestamps, which come back in UTC), and keeps
// all of its SQL in this package.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/store"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ConnectTimeout bounds the reachability check in Open (unless the caller's
// context is shorter) and, when the URL sets no connect_timeout, every later
// connection attempt of the pool.
const ConnectTimeout = 5 * time.Second

// Store is the Postgres implementation of store.Store. It is safe for
// concurrent use by many goroutines and by many processes sharing a database.
type Store struct {
	clock  clock.Clock
	pool   *pgxpool.Pool
	listen listeners // WatchChanges' dedicated connections
	faults store.Faults
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (postgres://USER[:PASSWORD]@HOST:PORT/DB
// with optional query parameters; parameters pgx does not know, such as
// search_path, are sent to the server as run-time parameters), checks that the
// server answers within ConnectTimeout, and brings the schema named by the
// search_path up to date. A malformed url is an error wrapping store.ErrInvalid;
// an unreachable server is a one-line error naming its host and port.
// Options (such as store.WithClock) apply to the returned handle only.
func Open(ctx context.Context, url string, opts ...store.Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: malformed database URL (%w; expected postgres://USER@HOST:PORT/DB[?PARAMS]): %s",
			store.ErrInvalid, oneLine(err.Error()))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	}
	addr := net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	who := fmt.Sprintf("user %s, database %s", cfg.ConnConfig.User, cfg.ConnConfig.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open %s (%s): %s", addr, who, oneLine(err.Error()))
	}
	pingCtx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	err = pool.Ping(pingCtx)
	timedOut := pingCtx.Err() != nil && ctx.Err() == nil
	cancel()
	if err != nil {
		pool.Close()
		return nil, connectError(addr, who, err, timedOut)
	}
	if err := readOnly(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %s (%s): %w", addr, who, err)
	}
	if err := ensureSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: schema of %s (%s): %w", addr, who, classify(err))
	}
	return &Store{clock: store.ApplyOptions(opts).Clock, pool: pool}, nil
}

// readOnly returns an error matching store.ErrStorageReadOnly when the
// server would run this connection's transactions read-only: a hot standby,
// or default_transaction_read_only set for the database or the user (every
// write, even the schema check at Open, would then fail with SQLSTATE 25006).
func readOnly(ctx context.Context, pool *pgxpool.Pool) error {
	var ro string
	if err := pool.QueryRow(ctx, `SELECT current_setting('transaction_read_only')`).Scan(&ro); err != nil {
		return fmt.Errorf("check transaction_read_only: %w", err)
	}
	if ro == "on" {
		return store.StorageFault(store.ErrStorageReadOnly, errors.New("transactions are read-only (transaction_read_only is on: "+
			"the server is a hot standby, or default_transaction_read_only is set for this database or user)"))
	}
	return nil
}

// StorageHealth implements store.Store: a server that runs transactions
// read-only is ErrStorageReadOnly; otherwise the fault of a recent failed
// write, if any. It costs one round trip.
func (s *Store) StorageHealth(ctx context.Context) error {
	if err := readOnly(ctx, s.pool); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return s.faults.Recent(store.Time(s.clock.Now()))
}

// classify marks err, when Postgres failed it because it refuses writes
// (read_only_sql_transaction, SQLSTATE 25006) or has no space left
// (disk_full, 53100), with store.ErrStorageReadOnly or store.ErrStorageFull.
// Every write goes through write, which classifies what it returns;
// classifying twice changes nothing.
func classify(err error) error {
	var pgErr *pgconn.PgError
	if err == nil || errors.Is(err, store.ErrUnavailable) || !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.Code {
	case "25006":
		return store.StorageFault(store.ErrStorageReadOnly, err)
	case "53100":
		return store.StorageFault(store.ErrStorageFull, err)
	}
	return err
}

// fault classifies err and remembers a storage fault for StorageHealth.
func (s *Store) fault(err error) error {
	return s.faults.Note(classify(err), store.Time(s.clock.Now()))
}

// connectError turns a failed first connection into one line that names the
// server. A server that answered (bad password, missing database) gets
// "cannot connect to"; one that did not answer gets "cannot reach".
func connectError(addr, who string, err error, timedOut bool) error {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		return &openError{fmt.Sprintf("postgres: cannot connect to %s (%s): %s (SQLSTATE %s)", addr, who, oneLine(pgErr.Message), pgErr.Code), err}
	case timedOut:
		return &openError{fmt.Sprintf("postgres: cannot reach %s (%s): no answer within %s", addr, who, ConnectTimeout), err}
	}
	return &openError{fmt.Sprintf("postgres: cannot reach %s (%s): %s", addr, who, connectCause(err)), err}
}

// openError is a one-line message that still unwraps to pgx's error, so
// errors.Is(err, context.DeadlineExceeded) and the like keep working.
type openError struct {
	msg string
	err error
}

func (e *openError) Error() string { return e.msg }
func (e *openError) Unwrap() error { return e.err }

// connectCause renders the reasons of every connection attempt pgconn made
// (TLS then plain text, each resolved address) on one line, without the
// "failed to connect to `user=… database=…`" preamble connectError replaces.
func connectCause(err error) string {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) && ce.Unwrap() != nil {
		err = ce.Unwrap()
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var parts []string
	seen := map[string]bool{}
	for _, e := range errs {
		if e == nil {
			continue
		}
		msg := oneLine(e.Error())
		if !seen[msg] {
			seen[msg] = true
			parts = append(parts, msg)
		}
	}
	return strings.Join(parts, "; ")
}

// oneLine folds a multi-line error message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// Backend returns "postgres".
func (s *Store) Backend() string { return "postgres" }

// Close closes every connection of the pool. It always returns nil.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// isUniqueViolation reports whether err is a UNIQUE or PRIMARY KEY failure
// (SQLSTATE 23505).
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
