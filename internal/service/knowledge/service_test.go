package knowledge_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestClaimTokenStoredHashed: the database holds the SHA-256 of a claim
// token, never the token; fencing compares hashes, so the stored value is
// no token; a release clears it.
func TestClaimTokenStoredHashed(t *testing.T) {
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		d := open(t)
		k := knowledge.New(d, clock.NewFake(backendtest.T0))
		ctx := context.Background()
		a := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "todo"})
		b := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "todo"})
		ca, err := k.ClaimObjects(ctx, "todo", "w", 1)
		if err != nil || len(ca) != 1 {
			t.Fatalf("ClaimObjects = %v, %v", ca, err)
		}
		cb, err := k.ClaimObject(ctx, b.ID, "w", []string{"todo"})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := d.Executor().ObjectGetMany(ctx, driver.ObjectGetManyParams{IDs: []int64{a.ID, b.ID}})
		if err != nil || len(rows) != 2 {
			t.Fatalf("rows %v, %v", rows, err)
		}
		for i, tok := range []string{ca[0].ClaimToken, cb.ClaimToken} {
			sum := sha256.Sum256([]byte(tok))
			if rows[i].ClaimToken != hex.EncodeToString(sum[:]) || rows[i].ClaimToken == tok {
				t.Fatalf("object %d stores %q for token %q, want the token's SHA-256", rows[i].ID, rows[i].ClaimToken, tok)
			}
			if err := k.TouchClaim(ctx, rows[i].ID, rows[i].ClaimToken); err == nil {
				t.Fatalf("the stored hash of object %d fenced like its token", rows[i].ID)
			}
		}
		if err := k.ReleaseClaim(ctx, a.ID, ca[0].ClaimToken); err != nil {
			t.Fatal(err)
		}
		if rows, _ := d.Executor().ObjectGetMany(ctx, driver.ObjectGetManyParams{IDs: []int64{a.ID}}); rows[0].ClaimToken != "" || rows[0].ClaimedBy != "" {
			t.Fatalf("released object stores %+v", rows[0])
		}
	})
}

// TestTransitionRollsBackOnFailure: a transition that fails after its first
// writes (its attachment is in; its content write meets a version number
// already taken) leaves nothing of it: objects, edges, versions, log, claim
// and status as before.
func TestTransitionRollsBackOnFailure(t *testing.T) {
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		d := open(t)
		clk := clock.NewFake(backendtest.T0)
		k := knowledge.New(d, clk)
		ctx := context.Background()
		o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "a", Content: json.RawMessage(`{"v":1}`)})
		claim, err := k.ClaimObjects(ctx, "a", "w", 1)
		if err != nil || len(claim) != 1 {
			t.Fatalf("claim: %v, %v", claim, err)
		}
		// A version numbered 2 already exists (written around the service,
		// as a concurrent writer that broke the rules would): the
		// transition's content write collides with it.
		if _, err := d.Executor().VersionInsertMany(ctx, []driver.VersionRow{{ObjectID: o.ID, Version: 2, Parents: []int64{1},
			Content: []byte(`{}`), ContentHash: "x", CreatedAt: backendtest.T0, IsHead: false}}); err != nil {
			t.Fatal(err)
		}
		before := backendtest.MustGetObject(t, k, o.ID)
		clk.Advance(time.Minute)
		_, atts, err := k.TransitionObject(ctx, o.ID, claim[0].ClaimToken, knowledge.ObjectTransition{From: "a", To: "b",
			Action: "completed", Agent: "step", Content: json.RawMessage(`{"v":2}`), Reasoning: 0,
			Attach: []knowledge.Attachment{{Object: knowledge.NewObject{Kind: "critique"}, BaseType: "depends_on"}}})
		if err == nil || len(atts) != 0 {
			t.Fatalf("transition over a taken version number = %v, %v; want an error and nothing made", atts, err)
		}
		after := backendtest.MustGetObject(t, k, o.ID)
		if after.Status != "a" || after.ClaimedBy != "w" || after.HeadVersion != 1 || len(after.Edges) != 0 ||
			len(after.Log) != len(before.Log) || string(after.Content) != string(before.Content) {
			t.Fatalf("after the failed transition: %+v, was %+v", after, before)
		}
		page, err := k.ListObjects(ctx, cks.ObjectFilter{})
		if err != nil || len(page.Objects) != 1 {
			t.Fatalf("objects after the failed transition: %v, %v; want the one", page.Objects, err)
		}
		if err := k.TouchClaim(ctx, o.ID, claim[0].ClaimToken); err != nil {
			t.Fatalf("the claim after the failed transition: %v", err)
		}
	})
}

// BenchmarkService runs the knowledge benchmarks of the store conformance
// suite against the composite store over the service, on both dialects.
func BenchmarkService(b *testing.B) {
	for _, d := range backendtest.All() {
		b.Run(d.Name, func(b *testing.B) {
			backendtest.BenchKnowledge(b, func(t testing.TB) *backend.Backend { return d.NewDB(t)(t) })
		})
	}
}
