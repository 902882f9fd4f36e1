package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/driver/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open opens a Driver on path, closed when t ends.
func open(t testing.TB, path string, opts ...driver.Option) *sqlite.Driver {
	t.Helper()
	d, err := sqlite.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// rawExec runs q on its own connection to path, as another tool would.
func rawExec(t testing.TB, path, q string, args ...any) error {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(q, args...)
	return err
}

// newDB is a fresh database file in t's temp directory.
func newDB(t testing.TB) drivertest.DB {
	path := filepath.Join(t.TempDir(), "cks.db")
	return drivertest.DB{
		Name: path,
		Open: func(t testing.TB, opts ...driver.Option) driver.Driver { return open(t, path, opts...) },
		Exec: func(t testing.TB, q string) error { return rawExec(t, path, q) },
	}
}

func TestConformance(t *testing.T) { drivertest.Run(t, newDB) }

func TestOpenCreatesDirectoryAndWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "cks.db")
	open(t, path)
	var mode string
	if err := rawDB(t, path).QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
}

// TestTimestampsAreFixedWidth: times are stored in one fixed-width format,
// so that string order is time order (RFC3339Nano would trim a whole second).
func TestTimestampsAreFixedWidth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	d := open(t, path)
	r := driver.LivenessRow{InstanceID: "i-1", ProcessKind: "critic", Hostname: "h", PID: 1, LivenessIntervalS: 1,
		StartedAt: drivertest.T0, LastHeartbeatAt: drivertest.T0.Add(1500 * time.Microsecond)}
	if err := drivertest.ErrOnly(d.Executor().LivenessUpsert(context.Background(), r)); err != nil {
		t.Fatal(err)
	}
	got := strs(t, rawDB(t, path), "SELECT started_at, last_heartbeat_at FROM cks_agent_liveness")
	if want := "2026-11-30T12:00:00.000000000Z|2026-11-30T12:00:00.001500000Z"; len(got) != 1 || got[0] != want {
		t.Fatalf("times stored as %q, want %q", got, want)
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
	if _, err := sqlite.Open(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("open of a directory: err = %v", err)
	}
	if _, err := sqlite.Open(context.Background(), ""); err == nil {
		t.Fatal("open of an empty path succeeded")
	}
}

// TestEmptyFileIsANewDatabase: an existing empty file is not refused.
func TestEmptyFileIsANewDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d := open(t, path)
	if _, err := d.Executor().LivenessList(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestOpenCreatesOwnerOnlyFiles: the database holds task payloads, so a new
// one is created 0600 in a directory created 0700, and SQLite gives its WAL
// and shared-memory files the database file's mode.
func TestOpenCreatesOwnerOnlyFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	path := filepath.Join(dir, "cks.db")
	d := open(t, path)
	if _, err := d.Executor().TaskInsertMany(context.Background(), []driver.TaskRow{{Type: "t", State: "OPEN", MaxAttempts: 3,
		Revision: 1, Payload: []byte(`{}`), Metadata: []byte(`{}`), CreatedAt: drivertest.T0, UpdatedAt: drivertest.T0}}); err != nil {
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
