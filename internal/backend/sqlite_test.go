package backend_test

// Facts of the SQLite database under the services, moved here from the
// driver's tests (which use only the driver): claims from several handles
// on one file.

import (
	"fmt"
	"testing"

	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// TestClaimObjectsAcrossHandles claims from one file through several handles
// (each its own writer connection, as separate processes would have) at
// once: every object is claimed exactly once, each with its own token.
func TestClaimObjectsAcrossHandles(t *testing.T) {
	path := sqliteFile(t)
	handles := []*backend.Backend{opener(path)(t), opener(path)(t), opener(path)(t)}
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
