package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/driver/sqlite"
)

// TestCheckpointsOffTheWriter: the writer never checkpoints (its
// wal_autocheckpoint is 0), so the database file grows only when a
// checkpoint copies the WAL's pages into it; after commits the
// checkpointer does, every frame of the WAL, and again after later ones.
func TestCheckpointsOffTheWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cks.db")
	d := open(t, path)
	if v, err := sqlite.WriterPragma(ctx, d, "wal_autocheckpoint"); err != nil || v != 0 {
		t.Fatalf("writer's wal_autocheckpoint = %d, %v; want 0", v, err)
	}
	size := func() int64 {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	for round := range 2 {
		before := size()
		runsBefore, _ := sqlite.Checkpoints(d)
		// 1 MiB of task descriptions, in one commit.
		rows := make([]driver.TaskRow, 16)
		for i := range rows {
			rows[i] = drivertest.SeedTask()
			rows[i].Description = strings.Repeat("x", 64<<10)
		}
		if _, err := d.Executor().TaskInsertMany(ctx, rows); err != nil {
			t.Fatal(err)
		}
		// Nothing else writes: the checkpoint that copied the commit is
		// the latest one, and it copied every frame.
		deadline := time.Now().Add(30 * time.Second)
		for {
			runs, last := sqlite.Checkpoints(d)
			if size() >= before+1<<20 && runs > runsBefore && last.Log > 0 && last.Checkpointed == last.Log {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the database file is %d bytes, %d before the commit; %d checkpoints since, the latest %+v",
					round, size(), before, runs-runsBefore, last)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// TestCloseStopsTheCheckpointer: the checkpointer's goroutine runs from
// Open, and Close returns only once it has ended.
func TestCloseStopsTheCheckpointer(t *testing.T) {
	d, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cks.db"))
	if err != nil {
		t.Fatal(err)
	}
	stopped := sqlite.CheckpointerStopped(d)
	select {
	case <-stopped:
		t.Fatal("the checkpointer is not running after Open")
	default:
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Close returned before the checkpointer's goroutine ended")
	}
}
