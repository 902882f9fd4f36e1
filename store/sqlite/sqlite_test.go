package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/sqlite"
	"github.com/cks-dev/cks/store/storetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t testing.TB, path string, opts ...store.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t testing.TB) storetest.Opener {
		path := filepath.Join(t.TempDir(), "cks.db")
		return func(t testing.TB, opts ...store.Option) store.Store { return open(t, path, opts...) }
	}, storetest.Skip("VersionNumbersPerObject")) // numbered across objects; knowledge.Service replaces it
}

func TestOpenCreatesDirectoryAndWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "cks.db")
	open(t, path)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
}

func TestTimestampsAreFixedWidth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	s := open(t, path)
	r := storetest.Liveness("i-1", "critic", 0) // whole second: RFC3339Nano would trim it
	storetest.MustUpsert(t, s, r)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var started string
	if err := db.QueryRow("SELECT started_at FROM cks_agent_liveness").Scan(&started); err != nil {
		t.Fatal(err)
	}
	if started != "2026-11-30T12:00:00.000000000Z" {
		t.Fatalf("started_at stored as %q, want fixed-width 2026-11-30T12:00:00.000000000Z", started)
	}
}

func TestRefusesNonSQLiteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "notes.txt")
	content := []byte("these are not the tables you are looking for\n")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "not a SQLite database") {
		t.Fatalf("open of a text file: err = %v, want 'not a SQLite database'", err)
	}
	got, _ := os.ReadFile(path)
	entries, _ := os.ReadDir(dir)
	if string(got) != string(content) || len(entries) != 1 {
		t.Fatalf("refused open changed the disk: content %q, %d entries", got, len(entries))
	}
}

// TestUpgradesOlderSchema opens a database whose cks_agent_liveness predates the
// current_task_* columns and finds them added, with the old rows intact.
func TestUpgradesOlderSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE cks_agent_liveness (
		instance_id TEXT PRIMARY KEY, process_kind TEXT NOT NULL, hostname TEXT NOT NULL,
		pid INTEGER NOT NULL, liveness_interval_s REAL NOT NULL,
		started_at TEXT NOT NULL, last_heartbeat_at TEXT NOT NULL);
	INSERT INTO cks_agent_liveness VALUES
		('old-1', 'critic', 'h', 10, 30, '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:30.000000000Z'),
		('old-2', 'pipeline', 'h', 11, 15, '2026-11-30T12:01:00.000000000Z', '2026-11-30T12:01:00.000000000Z');`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, path)
	storetest.CheckUpgradedLiveness(t, s)
}

// TestOpenCreatesOwnerOnlyFiles: the database holds task payloads, so a new
// one is created 0600 in a directory created 0700, and SQLite gives its WAL
// and shared-memory files the database file's mode.
func TestOpenCreatesOwnerOnlyFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	path := filepath.Join(dir, "cks.db")
	s := open(t, path)
	if _, _, err := s.Enqueue(context.Background(), store.NewTask{Type: "t", Title: "x"}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}
}
