package knowledge_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/postgres"
	"github.com/cks-dev/cks/driver/sqlite"
	"github.com/cks-dev/cks/knowledge"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/backendtest"
	"github.com/cks-dev/cks/store/storetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// dialect creates fresh databases of one driver.
type dialect struct {
	name string
	// newDB creates an empty database, dropped when t ends, and returns an
	// opener of driver handles on it (closed when their t ends).
	newDB func(t testing.TB) func(t testing.TB, opts ...store.Option) driver.Driver
}

// dialects returns both drivers.
func dialects() []dialect {
	return []dialect{
		{"sqlite", func(t testing.TB) func(testing.TB, ...store.Option) driver.Driver {
			path := filepath.Join(t.TempDir(), "cks.db")
			return func(t testing.TB, opts ...store.Option) driver.Driver {
				t.Helper()
				d, err := sqlite.Open(context.Background(), path, opts...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Close() })
				return d
			}
		}},
		{"postgres", func(t testing.TB) func(testing.TB, ...store.Option) driver.Driver {
			url := backendtest.PostgresURL(t)
			return func(t testing.TB, opts ...store.Option) driver.Driver {
				t.Helper()
				d, err := postgres.Open(context.Background(), url, opts...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Close() })
				return d
			}
		}},
	}
}

// serviceStore is the store.Store the conformance suite's knowledge and
// version tests need, made of a knowledge.Service over a driver: those
// methods, and WatchChanges over the driver's listener. The other parts of
// store.Store are nil (storetest.RunKnowledge calls none of them).
type serviceStore struct {
	store.Liveness
	store.Principals
	store.Tasks
	store.TaskControl
	store.SweeperControl
	*knowledge.Service
	d driver.Driver
}

func (s serviceStore) Backend() string { return s.d.Dialect() }
func (s serviceStore) Close() error    { return s.d.Close() }

// StorageHealth is the composite store's (not the knowledge store's); the
// knowledge tests never call it.
func (s serviceStore) StorageHealth(context.Context) error { return nil }

// WatchChanges calls f for each of topics once the listener is connected,
// then for every notification of one of them, until ctx ends. (A test
// adapter: a lost connection is returned, not retried.)
func (s serviceStore) WatchChanges(ctx context.Context, topics []string, f func(topic string)) error {
	set, err := store.ValidateTopics(topics)
	if err != nil {
		return err
	}
	l := s.d.Listener()
	if err := l.Connect(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer l.Close(context.WithoutCancel(ctx))
	for _, topic := range slices.Sorted(func(yield func(string) bool) {
		for t := range set {
			if !yield(t) {
				return
			}
		}
	}) {
		f(topic)
	}
	for {
		got, err := l.WaitForTopics(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		for _, topic := range got {
			if set[topic] {
				f(topic)
			}
		}
	}
}

// TestConformance runs the knowledge and version tests of the store
// conformance suite against the service, on both dialects.
func TestConformance(t *testing.T) {
	for _, dl := range dialects() {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			storetest.RunKnowledge(t, func(t testing.TB) storetest.Opener {
				open := dl.newDB(t)
				return func(t testing.TB, opts ...store.Option) store.Store {
					d := open(t, opts...)
					return serviceStore{Service: knowledge.New(d, store.ApplyOptions(opts).Clock), d: d}
				}
			})
		})
	}
}

// TestClaimTokenStoredHashed: the database holds the SHA-256 of a claim
// token, never the token; fencing compares hashes, so the stored value is
// no token; a release clears it.
func TestClaimTokenStoredHashed(t *testing.T) {
	for _, dl := range dialects() {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			d := dl.newDB(t)(t)
			k := knowledge.New(d, clock.NewFake(storetest.T0))
			ctx := context.Background()
			a := storetest.MustCreateObject(t, k, store.NewObject{Kind: "question", Status: "todo"})
			b := storetest.MustCreateObject(t, k, store.NewObject{Kind: "question", Status: "todo"})
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
				if rows[i].ClaimTokenHash != hex.EncodeToString(sum[:]) || rows[i].ClaimTokenHash == tok {
					t.Fatalf("object %d stores %q for token %q, want the token's SHA-256", rows[i].ID, rows[i].ClaimTokenHash, tok)
				}
				if err := k.TouchClaim(ctx, rows[i].ID, rows[i].ClaimTokenHash); err == nil {
					t.Fatalf("the stored hash of object %d fenced like its token", rows[i].ID)
				}
			}
			if err := k.ReleaseClaim(ctx, a.ID, ca[0].ClaimToken); err != nil {
				t.Fatal(err)
			}
			if rows, _ := d.Executor().ObjectGetMany(ctx, driver.ObjectGetManyParams{IDs: []int64{a.ID}}); rows[0].ClaimTokenHash != "" || rows[0].ClaimedBy != "" {
				t.Fatalf("released object stores %+v", rows[0])
			}
		})
	}
}

// TestTransitionRollsBackOnFailure: a transition that fails after its first
// writes (its attachment is in; its content write meets a version number
// already taken) leaves nothing of it: objects, edges, versions, log, claim
// and status as before.
func TestTransitionRollsBackOnFailure(t *testing.T) {
	for _, dl := range dialects() {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			open := dl.newDB(t)
			d := open(t)
			clk := clock.NewFake(storetest.T0)
			k := knowledge.New(d, clk)
			ctx := context.Background()
			o := storetest.MustCreateObject(t, k, store.NewObject{Kind: "question", Status: "a", Content: json.RawMessage(`{"v":1}`)})
			claim, err := k.ClaimObjects(ctx, "a", "w", 1)
			if err != nil || len(claim) != 1 {
				t.Fatalf("claim: %v, %v", claim, err)
			}
			// A version numbered 2 already exists (written around the service,
			// as a concurrent writer that broke the rules would): the
			// transition's content write collides with it.
			if _, err := d.Executor().VersionInsertMany(ctx, []driver.VersionRow{{ObjectID: o.ID, Version: 2, Parents: []int64{1},
				Content: []byte(`{}`), ContentHash: "x", CreatedAt: storetest.T0, IsHead: false}}); err != nil {
				t.Fatal(err)
			}
			before := storetest.MustGetObject(t, k, o.ID)
			clk.Advance(time.Minute)
			_, atts, err := k.TransitionObject(ctx, o.ID, claim[0].ClaimToken, store.ObjectTransition{From: "a", To: "b",
				Action: "completed", Agent: "step", Content: json.RawMessage(`{"v":2}`), Reasoning: 0,
				Attach: []store.Attachment{{Object: store.NewObject{Kind: "critique"}, BaseType: "depends_on"}}})
			if err == nil || len(atts) != 0 {
				t.Fatalf("transition over a taken version number = %v, %v; want an error and nothing made", atts, err)
			}
			after := storetest.MustGetObject(t, k, o.ID)
			if after.Status != "a" || after.ClaimedBy != "w" || after.HeadVersion != 1 || len(after.Edges) != 0 ||
				len(after.Log) != len(before.Log) || string(after.Content) != string(before.Content) {
				t.Fatalf("after the failed transition: %+v, was %+v", after, before)
			}
			page, err := k.ListObjects(ctx, store.ObjectFilter{})
			if err != nil || len(page.Objects) != 1 {
				t.Fatalf("objects after the failed transition: %v, %v; want the one", page.Objects, err)
			}
			if err := k.TouchClaim(ctx, o.ID, claim[0].ClaimToken); err != nil {
				t.Fatalf("the claim after the failed transition: %v", err)
			}
		})
	}
}

// BenchmarkService runs the knowledge benchmarks of the store conformance
// suite against the service, on both dialects (compare with the first
// backends' BenchmarkKnowledge in store/sqlite and store/postgres).
func BenchmarkService(b *testing.B) {
	for _, dl := range dialects() {
		b.Run(dl.name, func(b *testing.B) {
			storetest.BenchKnowledge(b, func(t testing.TB) store.Store {
				d := dl.newDB(t)(t)
				return serviceStore{Service: knowledge.New(d, nil), d: d}
			})
		})
	}
}
