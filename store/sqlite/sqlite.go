// Package sqlite is the embedded SQLite backend of cks: one database file, WAL
// mode, every write through a single writer connection in BEGIN IMMEDIATE
// transactions, reads through a small pool. It uses modernc.org/sqlite, a
// cgo-free driver, so `go build` needs no C toolchain.
package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/store"
	driver "modernc.org/sqlite" // registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
)

// timeFormat is fixed-width so that string order equals time order.
// time.RFC3339Nano trims trailing zeros and would break that.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

// BusyTimeout is how long a connection waits for a lock held by another
// connection or process before failing with SQLITE_BUSY.
const BusyTimeout = 5 * time.Second

// WriteLockTimeout is how long a write waits for the database's write lock
// (see beginImmediate) before failing with SQLITE_BUSY.
const WriteLockTimeout = 30 * time.Second

// Store is the SQLite implementation of store.Store.
type Store struct {
	clock clock.Clock
	path  string
	// writer has exactly one connection; transactions are BEGIN IMMEDIATE.
	// Its busy_timeout is 0: write through s.write (or beginImmediate),
	// which waits for the lock, never with writer.ExecContext directly.
	writer *sql.DB
	reader *sql.DB // a pool of query-only connections
	cache  stmtCache
	// pollInterval is WatchChanges' poll period; local wakes this handle's
	// watchers after a commit that published a change.
	pollInterval time.Duration
	localMu      sync.Mutex
	local        localChanges
	// readOnly is set when SQLite could open the file for reading only (the
	// process may not write the file, its directory or its file system):
	// every write then fails with SQLITE_READONLY.
	readOnly bool
	faults   store.Faults
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path, with its directory,
// and brings its schema up to date. A file that exists but is not a SQLite
// database is refused before the driver touches it. Options (such as
// store.WithClock) apply to the returned handle only; several handles may
// share one file, each with its own writer connection.
func Open(ctx context.Context, path string, opts ...store.Option) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	if err := create(path); err != nil {
		return nil, err
	}
	pragmas := url.Values{}
	for _, p := range []string{
		// The writer waits for the write lock in beginImmediate, not in
		// SQLite's busy handler.
		"busy_timeout(0)",
		"journal_mode(WAL)",
		"foreign_keys(1)",
		"synchronous(NORMAL)",
	} {
		pragmas.Add("_pragma", p)
	}
	pragmas.Set("_txlock", "immediate") // BeginTx issues BEGIN IMMEDIATE
	writer, err := sql.Open("sqlite", "file:"+path+"?"+pragmas.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	if err := pingWriter(ctx, writer); err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	readOnly, err := openedReadOnly(ctx, writer)
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := ensureSchema(ctx, writer); err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: schema of %s: %w", path, classify(err))
	}
	r := url.Values{}
	for _, p := range []string{
		fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()),
		"foreign_keys(1)",
		"query_only(1)",
	} {
		r.Add("_pragma", p)
	}
	reader, err := sql.Open("sqlite", "file:"+path+"?"+r.Encode())
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	reader.SetMaxOpenConns(4)
	o := store.ApplyOptions(opts)
	return &Store{clock: o.Clock, path: path, writer: writer, reader: reader, pollInterval: o.ChangePollInterval, readOnly: readOnly}, nil
}

// openedReadOnly reports whether SQLite opened the writer's file read-only,
// which it does, silently, when it may not open it for writing.
func openedReadOnly(ctx context.Context, writer *sql.DB) (bool, error) {
	conn, err := writer.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	var ro bool
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(interface{ IsReadOnly(string) (bool, error) })
		if !ok {
			return fmt.Errorf("driver connection %T cannot tell whether it is read-only", dc)
		}
		ro, err = c.IsReadOnly("main")
		return err
	})
	return ro, err
}

// StorageHealth implements store.Store: a database opened read-only is
// ErrStorageReadOnly; otherwise the fault of a recent failed write, if any.
func (s *Store) StorageHealth(ctx context.Context) error {
	if s.readOnly {
		return store.StorageFault(store.ErrStorageReadOnly,
			fmt.Errorf("sqlite: %s is read-only for this process (the file, its directory or its file system is not writable)", s.path))
	}
	return s.faults.Recent(store.Time(s.clock.Now()))
}

// classify marks err, when SQLite failed it because the database refuses
// writes or has no space left, with store.ErrStorageReadOnly or
// store.ErrStorageFull. Every write goes through write or beginImmediate,
// which classify what they return; classifying twice changes nothing.
func classify(err error) error {
	var se *driver.Error
	if err == nil || errors.Is(err, store.ErrUnavailable) || !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff { // the primary result code of an extended one
	case sqlite3.SQLITE_READONLY:
		return store.StorageFault(store.ErrStorageReadOnly, err)
	case sqlite3.SQLITE_FULL:
		return store.StorageFault(store.ErrStorageFull, err)
	}
	return err
}

// create makes a missing database file, empty, with mode 0600 in a
// directory created 0700: it holds task payloads, and SQLite creates a new
// file 0644 (and gives its -wal and -shm files the database's mode). An
// existing file or directory keeps its mode.
func create(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("sqlite: create directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	return f.Close()
}

// checkHeader refuses an existing, non-empty file that does not start with the
// SQLite magic string, so a wrong path never gets WAL files written next to it.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("sqlite: stat %s: %w", path, err)
	}
	if st.IsDir() {
		return fmt.Errorf("sqlite: %s is a directory; expected a database file path", path)
	}
	head := make([]byte, 16)
	n, err := io.ReadFull(f, head)
	if n == 0 && (err == io.EOF || err == io.ErrUnexpectedEOF) {
		return nil // empty file: SQLite treats it as a new database
	}
	if !bytes.Equal(head[:n], []byte("SQLite format 3\x00")) {
		return fmt.Errorf("sqlite: %s is not a SQLite database (bad file header); expected a SQLite 3 file or a new path", path)
	}
	return nil
}

// Backend returns "sqlite".
func (s *Store) Backend() string { return "sqlite" }

// Path returns the database file path.
func (s *Store) Path() string { return s.path }

// Close closes both connection pools.
func (s *Store) Close() error {
	return errors.Join(s.closeStatements(), s.reader.Close(), s.writer.Close())
}

// pingWriter opens the writer's connection, which sets journal_mode=WAL and
// so may meet a lock held by another process: it retries like beginImmediate.
func pingWriter(ctx context.Context, db *sql.DB) error {
	return pollLock(ctx, func() error { return db.PingContext(ctx) })
}

// beginImmediate starts a BEGIN IMMEDIATE transaction on the writer (the DSN's
// _txlock=immediate makes BeginTx do that). The writer's busy_timeout is zero
// and the wait for the write lock happens here instead, polling with short
// jittered sleeps (from 50µs, doubling up to 2ms) until WriteLockTimeout
// passes or ctx ends. SQLite's own busy handler backs off to 100ms sleeps, so
// writers that loop tightly starve the waiting ones; fine polling keeps many
// handles or processes writing one file fair enough.
func beginImmediate(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	var tx *sql.Tx
	err := pollLock(ctx, func() error {
		var err error
		tx, err = db.BeginTx(ctx, nil)
		return err
	})
	return tx, classify(err)
}

// pollLock runs try until it does not fail with SQLITE_BUSY, sleeping a little
// more each time, for at most WriteLockTimeout.
func pollLock(ctx context.Context, try func() error) error {
	deadline := time.Now().Add(WriteLockTimeout)
	sleep := 50 * time.Microsecond
	for {
		err := try()
		if !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(sleep/2 + rand.N(sleep))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		sleep = min(2*sleep, 2*time.Millisecond)
	}
}

// isBusy reports whether err is SQLITE_BUSY (another connection holds the lock).
func isBusy(err error) bool {
	return err != nil && strings.Contains(err.Error(), "SQLITE_BUSY")
}

// fmtTime renders t in the fixed-width UTC format.
func fmtTime(t time.Time) string { return store.Time(t).Format(timeFormat) }

// parseTime reads a timestamp written by fmtTime.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeFormat, s)
	if err != nil {
		// Tolerate rows written by other tools in plain RFC 3339.
		if t2, err2 := time.Parse(time.RFC3339Nano, s); err2 == nil {
			return store.Time(t2), nil
		}
		return time.Time{}, fmt.Errorf("sqlite: bad timestamp %q: %w", s, err)
	}
	return t, nil
}

// isUniqueViolation reports whether err is a UNIQUE or PRIMARY KEY failure.
func isUniqueViolation(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// collect reads every row of rows with scan and closes rows; an error of the
// iteration itself is wrapped naming what. (Postgres has pgx.CollectRows.)
func collect[T any](rows *sql.Rows, what string, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	return out, nil
}
