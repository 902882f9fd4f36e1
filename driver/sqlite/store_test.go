package sqlite_test

// Facts of the SQLite database under the composite store (store/backend
// over this driver), moved here from the first SQLite backend's tests: what
// the file holds, and claims from several handles on one file.

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/backend"
	"github.com/cks-dev/cks/backend/backendtest"
	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/knowledge"
)

// openStore opens the composite store on the file at path, closed when t
// ends.
func openStore(t testing.TB, path string, opts ...driver.Option) *backend.Backend {
	t.Helper()
	s, err := backend.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestLeaseTokensStoredHashed: the database file (and its WAL) never holds
// a plain lease token — not of a live lease, not of an aborted one — only
// its hash.
func TestLeaseTokensStoredHashed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	s := openStore(t, path)
	backendtest.MustEnqueue(t, s, cks.NewTask{Type: "t"})
	first := backendtest.MustClaimOne(t, s, "w1")
	if _, _, err := s.Tasks.Stop(t.Context(), first.ID, "op", "hold", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tasks.Start(t.Context(), first.ID, "op", ""); err != nil {
		t.Fatal(err)
	}
	second := backendtest.MustClaimOne(t, s, "w2")
	var content strings.Builder
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		content.Write(b)
	}
	for _, tok := range []string{first.LeaseToken, second.LeaseToken} {
		if strings.Contains(content.String(), tok) {
			t.Fatalf("the database holds the plain lease token %s", tok)
		}
	}
	if !strings.Contains(content.String(), driver.HashLeaseToken(second.LeaseToken)) {
		t.Fatal("the database does not hold the hash of the live lease's token")
	}
	if !strings.Contains(content.String(), driver.HashLeaseToken(first.LeaseToken)) {
		t.Fatal("the database does not hold the hash of the aborted lease's token")
	}
}

// TestClaimObjectsAcrossHandles claims from one file through several handles
// (each its own writer connection, as separate processes would have) at
// once: every object is claimed exactly once, each with its own token.
func TestClaimObjectsAcrossHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	handles := []*backend.Backend{openStore(t, path), openStore(t, path), openStore(t, path)}
	const total = 60
	for range total {
		if _, err := handles[0].Objects.CreateObject(t.Context(), knowledge.NewObject{Kind: "question", Status: "awaiting_critique"}); err != nil {
			t.Fatal(err)
		}
	}
	type claim struct {
		id    int64
		token string
	}
	results := make(chan []claim, 2*len(handles))
	errs := make(chan error, 2*len(handles))
	for i := range 2 * len(handles) {
		go func() {
			var got []claim
			for {
				objs, err := handles[i%len(handles)].Objects.ClaimObjects(t.Context(), "awaiting_critique", fmt.Sprintf("critic-%d", i), 4)
				if err != nil {
					errs <- err
					return
				}
				if len(objs) == 0 {
					results <- got
					return
				}
				for _, o := range objs {
					got = append(got, claim{o.ID, o.ClaimToken})
				}
			}
		}()
	}
	seen := map[int64]bool{}
	tokens := map[string]bool{}
	for range 2 * len(handles) {
		select {
		case err := <-errs:
			t.Fatal(err)
		case got := <-results:
			for _, c := range got {
				if seen[c.id] {
					t.Errorf("object %d claimed twice", c.id)
				}
				if c.token == "" || tokens[c.token] {
					t.Errorf("object %d: claim token %q empty or reused", c.id, c.token)
				}
				seen[c.id], tokens[c.token] = true, true
			}
		}
	}
	if len(seen) != total {
		t.Fatalf("claimed %d objects, want %d", len(seen), total)
	}
}

// TestSweeperControlShape checks cks_sweeper_control against ADR-015 and the
// stored updated_at (the store's clock, fixed-width), and the cks_changes
// counter a write bumps.
func TestSweeperControlShape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	s := openStore(t, path, driver.WithClock(clock.NewFake(backendtest.T0)))
	for _, running := range []bool{false, true} {
		if err := s.Sweepers.SetSweeperDesiredRunning(context.Background(), "graph_health", running); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name || ' ' || type || ' notnull=' || "notnull" || ' pk=' || pk
FROM pragma_table_info('cks_sweeper_control') ORDER BY cid`)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	rows.Close()
	want := "agent_id TEXT notnull=0 pk=1, desired_running BOOLEAN notnull=1 pk=0, updated_at TEXT notnull=1 pk=0"
	if got := strings.Join(cols, ", "); got != want {
		t.Errorf("cks_sweeper_control columns:\n got: %s\nwant: %s", got, want)
	}
	var (
		running bool
		updated string
		seq     int
	)
	if err := db.QueryRow(`SELECT desired_running, updated_at FROM cks_sweeper_control WHERE agent_id = 'graph_health'`).Scan(&running, &updated); err != nil {
		t.Fatal(err)
	}
	if !running || updated != "2026-11-30T12:00:00.000000000Z" {
		t.Errorf("row = %v, %q; want true, 2026-11-30T12:00:00.000000000Z", running, updated)
	}
	if err := db.QueryRow(`SELECT seq FROM cks_changes WHERE topic = ?`, cks.TopicSweeperControl).Scan(&seq); err != nil || seq != 2 {
		t.Errorf("cks_changes seq of %s = %d, %v; want 2 (one per write)", cks.TopicSweeperControl, seq, err)
	}
}
