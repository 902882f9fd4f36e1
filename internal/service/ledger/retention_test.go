package ledger_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestArchiveTerminal: the retention sweeper's task deletion, on both
// backends — only terminal tasks whose state changed before the cutoff,
// never one that a live task names (parent, dependency); each is in the
// archive, with its events, before it is deleted; a failed archive
// deletes nothing; a torn line a crashed pass left is cut off, so every
// line is one task of valid JSON; the deleted tasks' events go with them
// while the events table stays append-only.
func TestArchiveTerminal(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		c := ctx(t)
		mk := func(n cks.NewTask) int64 {
			t.Helper()
			n.Type = "t"
			task, _, err := s.Tasks.Enqueue(c, n)
			if err != nil {
				t.Fatal(err)
			}
			return task.ID
		}
		cancel := func(ids ...int64) {
			t.Helper()
			for _, id := range ids {
				if _, err := s.Tasks.Cancel(c, id, "op", "done"); err != nil {
					t.Fatal(err)
				}
			}
		}
		a := mk(cks.NewTask{})
		parent := mk(cks.NewTask{})
		child := mk(cks.NewTask{ParentID: &parent})
		dep := mk(cks.NewTask{})
		waiter := mk(cks.NewTask{DependsOn: []int64{dep}})
		e := mk(cks.NewTask{})
		f := mk(cks.NewTask{DependsOn: []int64{e}})
		opened := mk(cks.NewTask{})
		cancel(a, parent, dep, e, f)
		// The cutoff: just after the last of those state changes, and
		// before the young task's (the clock has passed it).
		last, err := s.Tasks.GetTask(c, f)
		if err != nil {
			t.Fatal(err)
		}
		cutoff := last.StateChangedAt.Add(time.Microsecond)
		for !time.Now().After(cutoff) {
		}
		young := mk(cks.NewTask{})
		cancel(young)

		// A failing archive deletes nothing.
		if n, err := s.Tasks.ArchiveTerminal(c, cutoff, 100, func([]cks.Task) error { return errors.New("disk full") }); err == nil || n != 0 {
			t.Fatalf("with a failing archive: %d, %v", n, err)
		}
		if _, err := s.Tasks.GetTask(c, a); err != nil {
			t.Fatalf("a failed archive deleted task %d: %v", a, err)
		}

		// The archive a crashed pass left torn (issue 38.7): its line is
		// cut off, not appended onto.
		path := filepath.Join(t.TempDir(), "archive", "tasks.jsonl")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(`{"archived_at":"2026-11-30T12:00:00Z","task":{"id":`), 0o600); err != nil {
			t.Fatal(err)
		}
		file := ledger.FileArchive(path, time.Now)
		var archived []int64
		n, err := s.Tasks.ArchiveTerminal(c, cutoff, 100, func(ts []cks.Task) error {
			for _, task := range ts {
				// Archived before the delete: still in the ledger.
				if _, err := s.Tasks.GetTask(c, task.ID); err != nil {
					t.Errorf("task %d handed to the archive after its delete: %v", task.ID, err)
				}
				archived = append(archived, task.ID)
			}
			return file(ts)
		})
		if err != nil || n != 3 {
			t.Fatalf("ArchiveTerminal = %d, %v; want 3 (a, e, f)", n, err)
		}
		slices.Sort(archived)
		if want := []int64{a, e, f}; !slices.Equal(archived, want) {
			t.Fatalf("archived %v, want %v", archived, want)
		}
		for _, id := range []int64{a, e, f} {
			if _, err := s.Tasks.GetTask(c, id); !errors.Is(err, cks.ErrNotFound) {
				t.Errorf("task %d still there: %v", id, err)
			}
		}
		for _, id := range []int64{parent, child, dep, waiter, opened, young} {
			if _, err := s.Tasks.GetTask(c, id); err != nil {
				t.Errorf("task %d deleted: %v", id, err)
			}
		}
		// The archive: one line a task, each with its events.
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		var lines []ledger.ArchivedTask
		for sc.Scan() {
			var l ledger.ArchivedTask
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("archive line %q: %v", sc.Text(), err)
			}
			lines = append(lines, l)
		}
		if len(lines) != 3 {
			t.Fatalf("archive of %d lines, want 3", len(lines))
		}
		for _, l := range lines {
			if l.Task.State != cks.TaskCancelled || len(l.Task.Events) < 2 || l.ArchivedAt.IsZero() {
				t.Errorf("archived task %d: state %s, %d events, archived at %v", l.Task.ID, l.Task.State, len(l.Task.Events), l.ArchivedAt)
			}
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("archive file mode %v, %v; want 0600", fi.Mode(), err)
		}
		// The dependency goes once its waiter ended; the parent once its
		// child is gone, at the next pass.
		cancel(child, waiter)
		if n, err := s.Tasks.ArchiveTerminal(c, time.Now().Add(time.Hour), 100, file); err != nil || n != 4 {
			t.Fatalf("second pass = %d, %v; want 4 (child, dep, waiter, young)", n, err)
		}
		if _, err := s.Tasks.GetTask(c, parent); err != nil {
			t.Fatalf("the parent went with its child in one batch: %v", err)
		}
		if n, err := s.Tasks.ArchiveTerminal(c, time.Now().Add(time.Hour), 100, file); err != nil || n != 1 {
			t.Fatalf("third pass = %d, %v; want 1 (the parent)", n, err)
		}
		// The events table is still append-only: a new task's events are
		// kept when another purge runs, and the ledger still works.
		left := mk(cks.NewTask{})
		if got, err := s.Tasks.GetTask(c, left); err != nil || len(got.Events) == 0 {
			t.Fatalf("a new task after the purge: %+v, %v", got, err)
		}
	})
}
