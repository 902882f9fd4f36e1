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
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cks-dev/cks/store"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// timeFormat is fixed-width so that string order equals time order.
// time.RFC3339Nano trims trailing zeros and would break that.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

// BusyTimeout is how long a connection waits for a lock held by another
// connection or process before failing with SQLITE_BUSY.
const BusyTimeout = 5 * time.Second

// Store is the SQLite implementation of store.Store.
type Store struct {
	path   string
	writer *sql.DB // exactly one connection; transactions are BEGIN IMMEDIATE
	reader *sql.DB // a pool of query-only connections
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path, with its directory,
// and brings its schema up to date. A file that exists but is not a SQLite
// database is refused before the driver touches it.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("sqlite: create directory for %s: %w", path, err)
	}
	pragmas := url.Values{}
	for _, p := range []string{
		fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()),
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
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := ensureSchema(ctx, writer); err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: schema of %s: %w", path, err)
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
	return &Store{path: path, writer: writer, reader: reader}, nil
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
	return errors.Join(s.reader.Close(), s.writer.Close())
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
