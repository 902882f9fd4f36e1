package knowledge_test

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// TestArchiveFinalLogs: the retention sweeper's deletion of the knowledge
// log, on both backends — only the entries older than the cutoff of
// objects in a final status last changed before it; each is in the
// archive before its delete; a failed archive deletes nothing; the
// objects stay (their status on their row) and the log is append-only
// again afterwards (the next transition is logged and kept).
func TestArchiveFinalLogs(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k, clk := knowledgeStore(t, open)
		c := backendtest.Ctx(t)
		// move claims id in from and moves it to "to", a minute later.
		move := func(id int64, from, to string) {
			t.Helper()
			clk.Advance(time.Minute)
			o, err := k.ClaimObject(c, id, "w", []string{from})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := k.TransitionObject(c, id, o.ClaimToken, knowledge.ObjectTransition{From: from, To: to,
				Action: "completed", Agent: "w", Reasoning: -1}); err != nil {
				t.Fatal(err)
			}
		}
		question := func() int64 {
			t.Helper()
			return backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: cks.StatusAwaitingResearch}).ID
		}
		resolved, parked, active, young := question(), question(), question(), question()
		move(resolved, cks.StatusAwaitingResearch, cks.StatusResolved)
		move(parked, cks.StatusAwaitingResearch, cks.StatusNeedsInput)
		move(active, cks.StatusAwaitingResearch, cks.StatusAwaitingCritique)
		cutoff := clk.Now().Add(time.Second)
		clk.Advance(time.Hour)
		move(young, cks.StatusAwaitingResearch, cks.StatusResolved)
		logOf := func(id int64) []cks.TransitionEntry { return backendtest.MustGetObject(t, k, id).Log }
		before := map[int64][]cks.TransitionEntry{}
		for _, id := range []int64{resolved, parked, active, young} {
			if before[id] = logOf(id); len(before[id]) != 2 {
				t.Fatalf("object %d logs %d entries, want 2", id, len(before[id]))
			}
		}

		// A failing archive deletes nothing.
		if n, err := k.ArchiveFinalLogs(c, cutoff, 100, func([]cks.TransitionEntry) error { return errors.New("disk full") }); err == nil || n != 0 {
			t.Fatalf("with a failing archive: %d, %v", n, err)
		}
		if got := logOf(resolved); len(got) != 2 {
			t.Fatalf("a failed archive deleted entries of %d: %d left", resolved, len(got))
		}

		path := filepath.Join(t.TempDir(), "archive", "knowledge.jsonl")
		file := knowledge.FileArchive(path, clk.Now)
		var archived []cks.TransitionEntry
		// maxRows 3 of 4: the bound holds; the next pass goes on.
		for _, want := range []int{3, 1, 0} {
			n, err := k.ArchiveFinalLogs(c, cutoff, 3, func(es []cks.TransitionEntry) error {
				for _, e := range es {
					// Archived before the delete: still in the log.
					if !containsSeq(logOf(e.ObjectID), e.Seq) {
						t.Errorf("entry %d handed to the archive after its delete", e.Seq)
					}
				}
				archived = append(archived, es...)
				return file(es)
			})
			if err != nil || n != want {
				t.Fatalf("ArchiveFinalLogs = %d, %v; want %d", n, err, want)
			}
		}
		// In seq order, as the log wrote them.
		want := append(append([]cks.TransitionEntry{}, before[resolved]...), before[parked]...)
		slices.SortFunc(want, func(a, b cks.TransitionEntry) int { return cmp.Compare(a.Seq, b.Seq) })
		if show(archived) != show(want) {
			t.Fatalf("archived\n %s\nwant %s", show(archived), show(want))
		}
		for _, id := range []int64{resolved, parked} {
			o := backendtest.MustGetObject(t, k, id)
			if len(o.Log) != 0 || o.Status == "" {
				t.Errorf("object %d after the purge: status %q, %d entries; want its row with an empty log", id, o.Status, len(o.Log))
			}
		}
		for _, id := range []int64{active, young} {
			if show(logOf(id)) != show(before[id]) {
				t.Errorf("object %d lost log entries: %s", id, show(logOf(id)))
			}
		}
		// The archive: one line an entry, in seq order.
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		var lines []cks.TransitionEntry
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var l knowledge.ArchivedEntry
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.ArchivedAt.IsZero() {
				t.Fatalf("archive line %q: %v", sc.Text(), err)
			}
			lines = append(lines, l.Entry)
		}
		if show(lines) != show(want) {
			t.Fatalf("archive file\n %s\nwant %s", show(lines), show(want))
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("archive file mode %v, %v; want 0600", fi.Mode(), err)
		}
		// Append-only again: the open object's next step is logged and kept
		// by a pass that deletes nothing of it.
		move(active, cks.StatusAwaitingCritique, cks.StatusAwaitingSynthesis)
		if n, err := k.ArchiveFinalLogs(c, clk.Now().Add(time.Hour), 100, file); err != nil || n != 2 {
			t.Fatalf("a pass after the young question aged = %d, %v; want 2 (its entries)", n, err)
		}
		if got := logOf(active); len(got) != 3 {
			t.Fatalf("the open object logs %d entries, want 3", len(got))
		}
	})
}

func containsSeq(log []cks.TransitionEntry, seq int64) bool {
	return slices.ContainsFunc(log, func(e cks.TransitionEntry) bool { return e.Seq == seq })
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
