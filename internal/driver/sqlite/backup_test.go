package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/driver/sqlite"
)

// count returns the number of tasks in the database file at path.
func count(t testing.TB, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM cks_outbox_tasks").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBackupWhileWriting: a backup taken while another connection keeps
// committing is a consistent snapshot — every task committed before it
// began, none torn — that the driver opens as a database of its own; the
// steps report their progress up to the whole file; the writes were not
// held up (they went on committing during the copy).
func TestBackupWhileWriting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "cks.db"), filepath.Join(dir, "backup.db")
	d := open(t, src)
	rows := make([]driver.TaskRow, 64)
	for i := range rows {
		rows[i] = drivertest.SeedTask()
		rows[i].Description = strings.Repeat("x", 16<<10)
	}
	for range 4 { // 4 MiB: many steps of 16 pages
		if _, err := d.Executor().TaskInsertMany(ctx, rows); err != nil {
			t.Fatal(err)
		}
	}
	before := count(t, src)

	var wrote atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := d.Executor().TaskInsertMany(ctx, rows[:1]); err != nil {
				t.Error(err)
				return
			}
			wrote.Add(1)
		}
	})
	var steps []sqlite.BackupProgress
	err := sqlite.Backup(ctx, src, dst, sqlite.BackupOptions{Pages: 16, Progress: func(p sqlite.BackupProgress) {
		steps = append(steps, p)
		if len(steps) == 2 {
			// Writes commit between the steps: they wait for nothing.
			n, deadline := wrote.Load(), time.Now().Add(30*time.Second)
			for wrote.Load() < n+3 {
				if time.Now().After(deadline) {
					t.Error("no write committed in 30 s while the backup held its snapshot")
					return
				}
				runtime.Gosched()
			}
		}
	}})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) < 10 {
		t.Fatalf("%d progress reports of 16-page steps over 4 MiB", len(steps))
	}
	last := steps[len(steps)-1]
	if last.Copied != last.Total || last.Total < 1000 {
		t.Fatalf("last progress %+v, want the whole file", last)
	}
	for i := 1; i < len(steps); i++ {
		if steps[i].Copied <= steps[i-1].Copied {
			t.Fatalf("progress went back (a restarted copy): %+v then %+v", steps[i-1], steps[i])
		}
	}
	got, after := count(t, dst), count(t, src)
	if got < before || got > after || after <= before {
		t.Fatalf("backup holds %d tasks; %d before it began, %d after the writes", got, before, after)
	}
	b := open(t, dst) // the driver opens it as a database of its own
	if _, err := b.Executor().TaskInsertMany(ctx, rows[:1]); err != nil {
		t.Fatalf("writing the restored copy: %v", err)
	}
	if _, err := os.Stat(dst + ".partial"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the partial file is left: %v", err)
	}
}

// TestBackupRefusesAnExistingFile: a backup never overwrites.
func TestBackupRefusesAnExistingFile(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "cks.db"), filepath.Join(dir, "backup.db")
	open(t, src)
	if err := os.WriteFile(dst, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := sqlite.Backup(context.Background(), src, dst, sqlite.BackupOptions{}); !errors.Is(err, os.ErrExist) {
		t.Fatalf("backup over an existing file: %v, want ErrExist", err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "keep me" {
		t.Fatalf("the existing file was changed: %q", b)
	}
}

// TestBackupIsOneFile: the backup of a database in WAL mode, and the check
// of that backup, leave one file in the backup's directory — no -wal,
// -shm or .partial litter — and the copy still opens as a database.
func TestBackupIsOneFile(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "cks.db")
	d := open(t, src)
	if _, err := d.Executor().TaskInsertMany(ctx, []driver.TaskRow{drivertest.SeedTask()}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dst := filepath.Join(dir, "backup.db")
	if err := sqlite.Backup(ctx, src, dst, sqlite.BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sqlite.QuickCheck(ctx, dst); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "backup.db" {
		t.Fatalf("the backup's directory holds %q, want only backup.db", names)
	}
	if n := count(t, dst); n != 1 {
		t.Fatalf("the backup holds %d tasks, want 1", n)
	}
}
