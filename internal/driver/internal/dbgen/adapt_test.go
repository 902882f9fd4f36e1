package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/driver/schema"
)

// TestGeneratedCurrent: each driver's generated files are what generate
// writes now (dbgen check says the same from the module root, for
// scripts/test).
func TestGeneratedCurrent(t *testing.T) {
	for _, d := range schema.Dialects {
		dir, err := filepath.Abs(filepath.Join("..", "..", string(d)))
		if err != nil {
			t.Fatal(err)
		}
		files, err := render(dir)
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range files {
			have, err := os.ReadFile(filepath.Join(dir, path))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(have, want) {
				t.Errorf("internal/driver/%s/%s is not current: run go generate ./internal/driver/...", d, path)
			}
		}
	}
}

// fixtureDriver is a driver.go of one domain: a read by id with a lock, a
// list whose params carry a filter the query does not take, a count, a
// bulk insert over a one-row query, a primitive written by hand, a read
// by ids (SQLite has a one-id form of it), and a read by ids with a lock
// (every lock's query has a one-id form).
const fixtureDriver = `package driver

import (
	"context"
	"time"
)

type Lock int

type Executor interface {
	EdgeExecutor
	Notify(ctx context.Context, topic string) error
}

type EdgeRow struct {
	ID     int64
	Src    int64
	At     time.Time
	Weight int
}

type EdgeGetParams struct {
	ID   int64
	Lock Lock
}

type EdgeListParams struct {
	Src   int64
	Limit int
	Kind  string
}

type EdgeCountParams struct {
	Src int64
}

type EdgeReadManyParams struct {
	IDs  []int64
	Lock Lock
}

type EdgeExecutor interface {
	EdgeGet(ctx context.Context, p EdgeGetParams) (EdgeRow, error)
	EdgeList(ctx context.Context, p EdgeListParams) ([]EdgeRow, error)
	EdgeCount(ctx context.Context, p EdgeCountParams) (int, error)
	EdgeInsertMany(ctx context.Context, rows []EdgeRow) ([]int64, error)
	EdgeHand(ctx context.Context) error
	EdgeOfMany(ctx context.Context, ids []int64) ([]EdgeRow, error)
	EdgeReadMany(ctx context.Context, p EdgeReadManyParams) ([]EdgeRow, error)
}
`

// fixtureQueries is a dbsqlc of the fixture in dialect d: Postgres has a
// FOR UPDATE form of the read and batches the insert.
func fixtureQueries(d schema.Dialect) string {
	nullTime, small, list := "pgtype.Timestamptz", "int32", "[]int64"
	if d == schema.SQLite {
		nullTime, small, list = "*string", "int64", "string"
	}
	q := `package dbsqlc

const edgeGet = "-- name: EdgeGet :one\nSELECT edge_id, src, at, weight FROM cks_edges WHERE edge_id = $1"
const edgeList = "-- name: EdgeList :many\nSELECT edge_id, src, at, weight FROM cks_edges WHERE src = $1 LIMIT $2"
const edgeCount = "-- name: EdgeCount :one\nSELECT count(*) FROM cks_edges WHERE src = $1"
const edgeOfMany = "-- name: EdgeOfMany :many\nSELECT edge_id, src, at, weight FROM cks_edges WHERE edge_id IN (LIST)"
const edgeOf = "-- name: EdgeOf :many\nSELECT edge_id, src, at, weight FROM cks_edges WHERE edge_id = $1"
const edgeReadMany = "-- name: EdgeReadMany :many\nSELECT edge_id, src, at, weight FROM cks_edges WHERE edge_id IN (LIST)"
const edgeRead = "-- name: EdgeRead :many\nSELECT edge_id, src, at, weight FROM cks_edges WHERE edge_id = $1"
const edgeInsert = "-- name: EdgeInsert :BATCH\nINSERT INTO cks_edges (src, at, weight) VALUES ($1, $2, $3) RETURNING edge_id"

type CksEdge struct {
	EdgeID int64
	Src    int64
	At     NULLTIME
	Weight SMALL
}

type EdgeListParams struct {
	Src int64
	Max SMALL
}

type EdgeCountParams struct {
	Src int64
}

type EdgeInsertParams struct {
	Src    int64
	At     NULLTIME
	Weight SMALL
}

func (q *Queries) EdgeGet(ctx context.Context, db DBTX, edgeID int64) (CksEdge, error) {}
func (q *Queries) EdgeList(ctx context.Context, db DBTX, arg EdgeListParams) ([]CksEdge, error) {}
func (q *Queries) EdgeCount(ctx context.Context, db DBTX, arg EdgeCountParams) (int64, error) {}
func (q *Queries) EdgeOfMany(ctx context.Context, db DBTX, ids LIST) ([]CksEdge, error) {}
func (q *Queries) EdgeReadMany(ctx context.Context, db DBTX, ids LIST) ([]CksEdge, error) {}
func (q *Queries) EdgeRead(ctx context.Context, db DBTX, edgeID int64) ([]CksEdge, error) {}
`
	if d == schema.Postgres {
		q += `
const edgeGetForUpdate = "-- name: EdgeGetForUpdate :one\nSELECT edge_id, src, at, weight FROM cks_edges WHERE edge_id = $1 FOR UPDATE"

func (q *Queries) EdgeGetForUpdate(ctx context.Context, db DBTX, edgeID int64) (CksEdge, error) {}
func (q *Queries) EdgeReadManyForUpdate(ctx context.Context, db DBTX, ids []int64) ([]CksEdge, error) {}
func (q *Queries) EdgeReadForUpdate(ctx context.Context, db DBTX, edgeID int64) ([]CksEdge, error) {}
func (q *Queries) EdgeInsert(ctx context.Context, db DBTX, arg []EdgeInsertParams) *EdgeInsertBatchResults {}
`
		q = strings.Replace(q, ":BATCH", ":batchone", 1)
	} else {
		q += `
func (q *Queries) EdgeInsert(ctx context.Context, db DBTX, arg EdgeInsertParams) (int64, error) {}
`
		q = strings.Replace(q, ":BATCH", ":one", 1)
		q += `
func (q *Queries) EdgeOf(ctx context.Context, db DBTX, edgeID int64) ([]CksEdge, error) {}
`
	}
	return strings.NewReplacer("NULLTIME", nullTime, "SMALL", small, "LIST", list).Replace(q)
}

// fixture writes the fixture driver of dialect d and returns its directory.
func fixture(t *testing.T, d schema.Dialect) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, string(d))
	files := map[string]string{
		filepath.Join(root, "driver.go"):                            fixtureDriver,
		filepath.Join(dir, "internal", "dbsqlc", "edges.sql.go"):    fixtureQueries(d),
		filepath.Join(dir, "edges.go"):                              "package " + string(d) + "\n\nfunc (e *executor) EdgeHand(ctx context.Context) error { return nil }\n",
		filepath.Join(dir, "internal", "dbsqlc", "not_go.sql"):      "-- name: EdgeGet :one",
		filepath.Join(dir, "internal", "dbsqlc", "ignored_test.go"): "package dbsqlc\n\nfunc (q *Queries) EdgeHand(ctx context.Context, db DBTX) error {}\n",
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestAdaptRules: what adapt generates, and what it leaves to the hand.
func TestAdaptRules(t *testing.T) {
	for _, c := range []struct {
		dialect       schema.Dialect
		want, notWant []string
	}{
		{schema.Postgres, []string{
			// A Lock picks the query of the lock; another is refused.
			"case p.Lock == driver.LockNone:\n\t\tx, err = e.d.q.EdgeGet(ctx, e.db, p.ID)",
			"case p.Lock == driver.LockUpdate:\n\t\tx, err = e.d.q.EdgeGetForUpdate(ctx, e.db, p.ID)",
			`return driver.EdgeRow{}, fmt.Errorf("postgres: edge get: unsupported lock %d", p.Lock)`,
			// Names pair by the row's key; types convert
			// by the dialect's table.
			"ID:     r.EdgeID,", "At:     fromNullTime(r.At),", "Weight: int(r.Weight),",
			"At:     nullTime(p.At),", "Weight: int32(p.Weight),",
			// The count's params are written from the primitive's.
			"x, err := e.d.q.EdgeCount(ctx, e.db, edgeCountParams(p))", "return int(x), nil",
			// The bulk form sends its one-row query in one batch.
			`return batchIDs(len(args), "edge insert many", e.d.q.EdgeInsert(ctx, e.db, args).QueryRow)`,
			// Lists go as arrays, never NULL.
			"x, err := e.d.q.EdgeOfMany(ctx, e.db, nonNil(ids))",
			// A lock's one-id form reads one id, its list form more.
			"case len(p.IDs) == 1 && p.Lock == driver.LockUpdate:\n\t\tx, err = e.d.q.EdgeReadForUpdate(ctx, e.db, p.IDs[0])",
			"case p.Lock == driver.LockUpdate:\n\t\tx, err = e.d.q.EdgeReadManyForUpdate(ctx, e.db, nonNil(p.IDs))",
			"case len(p.IDs) == 1 && p.Lock == driver.LockNone:\n\t\tx, err = e.d.q.EdgeRead(ctx, e.db, p.IDs[0])",
		}, []string{"ForShare"}},
		{schema.SQLite, []string{
			// One writer: no lock query, every lock reads the same.
			"x, err := e.d.q.EdgeGet(ctx, e.read, p.ID)",
			"at, err := parseNullTime(r.At)", "Weight: int64(p.Weight),", "At:     fmtNullTime(p.At),",
			// A bulk write runs its one-row statement a row, in a write.
			`err := e.write(ctx, "edge insert many", func(w *wtx) error {`,
			"x, err := e.d.q.EdgeInsert(ctx, w, edgeInsertParams(r))",
			// One id reads by the one-id form; more as a JSON list.
			"case len(ids) == 1:\n\t\tx, err = e.d.q.EdgeOf(ctx, e.read, ids[0])",
			"x, err = e.d.q.EdgeOfMany(ctx, e.read, jsonList(ids))",
			// One writer: a read by ids with a lock has its one-id form, and
			// no lock is refused.
			"case len(p.IDs) == 1:\n\t\tx, err = e.d.q.EdgeRead(ctx, e.read, p.IDs[0])",
		}, []string{"ForUpdate", "batchIDs", "edge read many: unsupported lock"}},
	} {
		t.Run(string(c.dialect), func(t *testing.T) {
			src, err := adapt(fixture(t, c.dialect))
			if err != nil {
				t.Fatal(err)
			}
			got := string(src)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("generated code lacks %q", w)
				}
			}
			for _, n := range append(c.notWant,
				// The list's params carry Kind, which its query drops: it
				// is the hand's, or the filter would be ignored silently.
				"func (e *executor) EdgeList(",
				// Written by hand.
				"func (e *executor) EdgeHand(",
				// Nothing calls it: not written.
				"func edgeListParams(") {
				if strings.Contains(got, n) {
					t.Errorf("generated code has %q", n)
				}
			}
			if t.Failed() {
				t.Logf("generated:\n%s", got)
			}
		})
	}
}

// TestDriverArg: a query is a form of the primitive of the longest name it
// begins with, and of X and XMany the one as bulk as the query (with both
// TaskDedupeFind and TaskDedupeFindMany, TaskDedupeFindAny was once the
// bulk one's, by map order, and its primitive went ungenerated).
func TestDriverArg(t *testing.T) {
	one := func(typ string) fn { return fn{params: []field{{"p", typ}}} }
	s := &source{methods: map[string]fn{
		"TaskDedupeFind":     one("driver.TaskDedupeFindParams"),
		"TaskDedupeFindMany": one("driver.TaskDedupeFindManyParams"),
		"TaskInsertMany":     one("[]driver.TaskRow"),
	}}
	for _, c := range []struct {
		query, typ string
		slice      bool
	}{
		{"TaskDedupeFindAny", "TaskDedupeFindParams", false},
		{"TaskDedupeFindLive", "TaskDedupeFindParams", false},
		{"TaskDedupeFindMany", "TaskDedupeFindManyParams", false},
		{"TaskInsert", "TaskRow", true},
	} {
		for range 20 { // map order varies from run to run
			if typ, slice := s.driverArg(c.query); typ != c.typ || slice != c.slice {
				t.Fatalf("driverArg(%s) = %s, %v; want %s, %v", c.query, typ, slice, c.typ, c.slice)
			}
		}
	}
}
