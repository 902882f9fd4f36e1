package backendtest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// backgroundTables are the tables a process writes on its own, whatever
// requests it serves: the change notifications a handle publishes after
// its commits (notifier.Coalescer's trailing publication of tasks_moved
// lands up to an interval later), the maintenance leader's lease, and the
// passes of a sweeper loop. No handler writes them for a request it
// refuses, so Records leaves them out: a refused request is judged by what
// it could have written, not by the whole file at one moment.
var backgroundTables = []string{"cks_changes", "cks_leaders", "cks_sweeper_passes"}

// Records is the content of every table of the SQLite database on conn but
// the background ones, as a digest per table read in one read transaction:
// what a refused request must leave as it was (compare with DiffState). A
// refused call's "nothing changed" compares these and not PRAGMA
// data_version, which moves with every commit of any connection, also the
// background ones (issue 44: a coalesced publication landing inside the
// window failed a fuzz run).
func Records(t testing.TB, conn *sql.Conn) map[string]string {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("records: begin: %v", err)
	}
	defer tx.Rollback() //nolint:errcheck // a read
	names, err := column[string](ctx, tx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatalf("records: tables: %v", err)
	}
	out := map[string]string{}
	for _, name := range names {
		if slices.Contains(backgroundTables, name) {
			continue
		}
		d, err := tableDigest(ctx, tx, name)
		if err != nil {
			t.Fatalf("records: %s: %v", name, err)
		}
		out[name] = d
	}
	return out
}

// tableDigest is the row count and a hash of the rows of table, in an order
// of their own (sorted), so that the order a scan returns them in does not
// matter.
func tableDigest(ctx context.Context, tx *sql.Tx, table string) (string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT * FROM "`+strings.ReplaceAll(table, `"`, `""`)+`"`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var lines []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		lines = append(lines, fmt.Sprintf("%q", vals))
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	slices.Sort(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return fmt.Sprintf("%d rows, %s", len(lines), hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// column reads the one column of query's rows.
func column[T any](ctx context.Context, tx *sql.Tx, query string) ([]T, error) {
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
