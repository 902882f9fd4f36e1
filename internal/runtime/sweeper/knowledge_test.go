package sweeper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// kfix is one backend's store for a knowledge sweeper test.
type kfix struct {
	t    *testing.T
	open backendtest.Opener
	st   *backend.Backend
}

func newKFix(t *testing.T, open backendtest.Opener) *kfix {
	return &kfix{t: t, open: open, st: open(t, driver.WithClock(clock.NewFake(backendtest.T0)))}
}

func (f *kfix) versions() *knowledge.Service { return f.st.Objects }

func (f *kfix) obj(kind, status string, content any) int64 {
	f.t.Helper()
	var raw json.RawMessage
	if content != nil {
		b, err := json.Marshal(content)
		if err != nil {
			f.t.Fatal(err)
		}
		raw = b
	}
	return backendtest.MustCreateObject(f.t, f.st.Objects, knowledge.NewObject{Kind: kind, Status: status, Content: raw}).ID
}

func (f *kfix) edge(src, dst int64, base string) {
	f.t.Helper()
	if _, err := f.st.Objects.AddEdges(context.Background(), []knowledge.NewEdge{{Src: src, Dst: dst, BaseType: base}}); err != nil {
		f.t.Fatal(err)
	}
}

// tasks returns the payloads and dedupe keys of the tasks of typ, by id.
func (f *kfix) tasks(typ string) (payloads []string, keys []string) {
	f.t.Helper()
	page, err := f.st.Tasks.ListTasks(context.Background(), cks.TaskFilter{Types: []string{typ}, Limit: cks.MaxListLimit})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, task := range page.Tasks {
		c, err := cks.CanonicalJSON(task.Payload)
		if err != nil {
			f.t.Fatal(err)
		}
		payloads = append(payloads, string(c))
		keys = append(keys, task.DedupeKey)
	}
	return payloads, keys
}

func (f *kfix) sweep(s sweeper.Sweeper, want int) {
	f.t.Helper()
	n, err := s.SweepOnce(context.Background())
	if err != nil {
		f.t.Fatalf("%s: %v", s.ID(), err)
	}
	if n != want {
		f.t.Fatalf("%s: pass returned %d, want %d", s.ID(), n, want)
	}
}

func wantStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// fork makes object id forked with n heads (n-1 extra writes from its first
// version) and returns the heads, ascending.
func (f *kfix) fork(v *knowledge.Service, id int64, n int) []int64 {
	f.t.Helper()
	ctx := context.Background()
	vs, err := v.ObjectVersions(ctx, id)
	if err != nil || len(vs) == 0 {
		f.t.Fatalf("versions of %d: %v %v", id, vs, err)
	}
	base := vs[0].Version
	for i := range n {
		if _, err := v.WriteVersion(ctx, id, base, json.RawMessage(fmt.Sprintf(`{"edit":%d}`, i)), "test"); err != nil {
			f.t.Fatal(err)
		}
	}
	heads, err := v.Heads(ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	var ids []int64
	for _, h := range heads {
		ids = append(ids, h.Version)
	}
	if len(ids) != n {
		f.t.Fatalf("object %d has heads %v, want %d", id, ids, n)
	}
	return ids
}

func TestForkDetection(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newKFix(t, open)
		v := f.versions()
		plain := f.obj("note", "", map[string]any{"a": 1})
		edited := f.obj("note", "", map[string]any{"a": 1})
		two := f.obj("note", "", map[string]any{"a": 1})
		three := f.obj("claim", "", map[string]any{"a": 1})
		_ = plain
		// A linear edit is not a fork.
		vs, _ := v.ObjectVersions(context.Background(), edited)
		if _, err := v.WriteVersion(context.Background(), edited, vs[0].Version, json.RawMessage(`{"a":2}`), "t"); err != nil {
			t.Fatal(err)
		}
		h2 := f.fork(v, two, 2)
		h3 := f.fork(v, three, 3)
		s := sweeper.ForkDetection{Tasks: f.st.Tasks, Forks: v}
		f.sweep(s, 2)
		p, k := f.tasks(cks.TaskTypeResolveFork)
		wantStrings(t, "payloads", p, []string{
			fmt.Sprintf(`{"heads":[%d,%d],"object_id":%d}`, h2[0], h2[1], two),
			fmt.Sprintf(`{"heads":[%d,%d,%d],"object_id":%d}`, h3[0], h3[1], h3[2], three),
		})
		wantStrings(t, "keys", k, []string{
			fmt.Sprintf("resolve_fork:%d:v%d,v%d", two, h2[0], h2[1]),
			fmt.Sprintf("resolve_fork:%d:v%d,v%d,v%d", three, h3[0], h3[1], h3[2]),
		})
		f.sweep(s, 0) // dedupe: nothing new
		if p, _ := f.tasks(cks.TaskTypeResolveFork); len(p) != 2 {
			t.Fatalf("second pass: %d tasks", len(p))
		}
	})
}

// TestForkDetectionKeysOfPerObjectNumbers: the once-ever keys of forks
// found while versions were numbered across objects ("resolve_fork:7:2,3",
// global ids) never block a fork whose per-object head numbers are the same
// digits: the keys name heads by version number ("v2,v3").
func TestForkDetectionKeysOfPerObjectNumbers(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newKFix(t, open)
		v := f.versions()
		o := f.obj("note", "", map[string]any{"a": 1})
		heads := f.fork(v, o, 2)
		// A task of the global numbering, long done, with the same digits.
		old, _, err := f.st.Tasks.Enqueue(context.Background(), cks.NewTask{Type: cks.TaskTypeResolveFork, DedupeOnce: true,
			DedupeKey: fmt.Sprintf("resolve_fork:%d:%d,%d", o, heads[0], heads[1])})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.Tasks.Cancel(context.Background(), old.ID, "test", "resolved before the upgrade"); err != nil {
			t.Fatal(err)
		}
		f.sweep(sweeper.ForkDetection{Tasks: f.st.Tasks, Forks: v}, 1)
	})
}

// TestForkDetectionTwoHubs: two sweepers on two handles of one database sweep
// the same fork at the same time; exactly one task results.
func TestForkDetectionTwoHubs(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newKFix(t, open)
		v := f.versions()
		id := f.obj("note", "", nil)
		f.fork(v, id, 2)
		for round := range 5 {
			var sweepers []sweeper.ForkDetection
			for range 2 {
				h := open(t)
				sweepers = append(sweepers, sweeper.ForkDetection{Tasks: h.Tasks, Forks: h.Objects})
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			counts := make([]int, len(sweepers))
			errs := make([]error, len(sweepers))
			for i, s := range sweepers {
				wg.Go(func() {
					<-start
					counts[i], errs[i] = s.SweepOnce(context.Background())
				})
			}
			close(start)
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			want := 0
			if round == 0 {
				want = 1
			}
			if counts[0]+counts[1] != want {
				t.Fatalf("round %d: created %v, want %d in all", round, counts, want)
			}
			n, err := f.st.Tasks.CountTasks(context.Background(), cks.TaskFilter{Types: []string{cks.TaskTypeResolveFork}})
			if err != nil || n != 1 {
				t.Fatalf("round %d: %d resolve_fork tasks (%v), want exactly 1", round, n, err)
			}
		}
	})
}

func TestForkDetectionWithoutVersions(t *testing.T) {
	_, err := sweeper.ForkDetection{}.SweepOnce(context.Background())
	if err == nil || !errors.Is(err, sweeper.ErrNoVersions) {
		t.Fatalf("got %v, want sweeper.ErrNoVersions", err)
	}
	_, err = (&sweeper.GraphHealth{}).SweepOnce(context.Background())
	if err == nil || !errors.Is(err, sweeper.ErrNoVersions) {
		t.Fatalf("got %v, want sweeper.ErrNoVersions", err)
	}
}

func claim(s, p, v string) map[string]any {
	return map[string]any{"subject": s, "predicate": p, "value": v}
}

func TestContradiction(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newKFix(t, open)
		a := f.obj("claim", "", claim("Paris", "capital_of", "France"))
		b := f.obj("claim", "", claim(" paris ", "Capital_Of", "Germany"))                            // contradicts a
		c := f.obj("claim", "", claim("PARIS", "capital_of", " france "))                             // agrees with a, contradicts b
		f.obj("claim", "disputed", claim("paris", "capital_of", "Spain"))                             // disputed: ignored
		f.obj("claim", "", claim("Paris", "population", "2M"))                                        // other predicate
		f.obj("claim", "", claim("Lyon", "capital_of", "Germany"))                                    // other subject
		f.obj("claim", "", map[string]any{"subject": "Paris", "predicate": "capital_of"})             // no value
		f.obj("claim", "", map[string]any{"subject": "Paris", "predicate": "capital_of", "value": 7}) // not a string
		f.obj("note", "", claim("Paris", "capital_of", "Italy"))                                      // not a claim
		x := f.obj("claim", "", claim("water", "boils_at", "100C"))
		y := f.obj("claim", "", claim("Water", "boils_at", "90C"))
		s := sweeper.Contradiction{Tasks: f.st.Tasks, Objects: f.st.Objects}
		f.sweep(s, 3)
		p, k := f.tasks(cks.TaskTypeCritique)
		pair := func(a, b int64) string { return fmt.Sprintf(`{"claims":[%d,%d]}`, a, b) }
		wantStrings(t, "payloads", p, []string{pair(a, b), pair(b, c), pair(x, y)})
		wantStrings(t, "keys", k, []string{
			fmt.Sprintf("critique:%d,%d", a, b), fmt.Sprintf("critique:%d,%d", b, c), fmt.Sprintf("critique:%d,%d", x, y)})
		f.sweep(s, 0)
	})
}

// changeContent gives object id new content through a pipeline transition.
func (f *kfix) changeContent(id int64, status string, content string) {
	f.t.Helper()
	ctx := context.Background()
	o, err := f.st.Objects.ClaimObject(ctx, id, "test", []string{status})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, _, err := f.st.Objects.TransitionObject(ctx, id, o.ClaimToken, knowledge.ObjectTransition{From: status, To: status,
		Action: "edited", Agent: "test", Content: json.RawMessage(content), Reasoning: -1}); err != nil {
		f.t.Fatal(err)
	}
}

func TestInferenceStaleness(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newKFix(t, open)
		ctx := context.Background()
		p1 := f.obj("claim", "found", map[string]any{"v": 1})
		p2 := f.obj("claim", "found", map[string]any{"v": 2})
		hash := func(id int64) string { return backendtest.MustGetObject(t, f.st.Objects, id).ContentHash }
		h1, h2 := hash(p1), hash(p2)
		premises := func(m map[int64]string) map[string]any {
			out := map[string]string{}
			for k, v := range m {
				out[fmt.Sprint(k)] = v
			}
			return map[string]any{"premises": out, "text": "therefore"}
		}
		fresh := f.obj("inference", "", premises(map[int64]string{p1: h1}))
		stale := f.obj("inference", "", premises(map[int64]string{p1: h1, p2: h2}))
		gone := f.obj("inference", "", premises(map[int64]string{p1: h1, 999999: "abc"}))
		f.obj("inference", "", map[string]any{"text": "no premises"})
		f.obj("inference", "", map[string]any{"premises": map[string]string{"x": "abc"}}) // malformed: ignored
		f.obj("note", "", premises(map[int64]string{p2: "old"}))                          // not an inference
		_ = fresh
		s := sweeper.InferenceStaleness{Tasks: f.st.Tasks, Objects: f.st.Objects}
		// Only the inference with a missing premise is stale so far.
		f.sweep(s, 1)
		p, k := f.tasks(cks.TaskTypeRederive)
		wantStrings(t, "payloads", p, []string{fmt.Sprintf(`{"object_id":%d}`, gone)})
		wantStrings(t, "keys", k, []string{fmt.Sprintf("rederive:%d:%s,missing", gone, h1)})

		f.changeContent(p2, "found", `{"v": 3}`)
		h2new := hash(p2)
		f.sweep(s, 1)
		p, k = f.tasks(cks.TaskTypeRederive)
		hs := []string{h1, h2new}
		slices.Sort(hs)
		wantStrings(t, "payloads", p, []string{fmt.Sprintf(`{"object_id":%d}`, gone), fmt.Sprintf(`{"object_id":%d}`, stale)})
		wantStrings(t, "keys", k[1:], []string{fmt.Sprintf("rederive:%d:%s,%s", stale, hs[0], hs[1])})
		f.sweep(s, 0) // dedupe

		// A premise that changes again while the task waits is new work.
		f.changeContent(p2, "found", `{"v": 4}`)
		f.sweep(s, 1)
		// A premise changed back to the recorded content is fresh again.
		f.changeContent(p2, "found", `{"v": 2}`)
		if h := hash(p2); h != h2 {
			t.Fatalf("hash of restored content %s, want %s", h, h2)
		}
		f.sweep(s, 0)
		_ = ctx
	})
}

// TestGraphHealth plants a small graph:
//
//	q (question, alone)         not an orphan by design
//	o1, o2 (no edges)           orphans
//	a → b → c → a (depends_on)  a cycle of 3
//	d → a, c → e                upstream and downstream of it, not on it
//	b → h → f                   between two cycles, not on one
//	f → g → f (depends_on)      a cycle of 2
//	x → y, y → x (supports)     not depends_on: no cycle
func TestGraphHealth(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newKFix(t, open)
		v := f.versions()
		f.obj("question", "awaiting_research", map[string]any{"text": "why?"})
		o1 := f.obj("note", "", nil)
		ids := map[string]int64{}
		for _, n := range []string{"a", "b", "c", "d", "e", "h", "f", "g", "x", "y"} {
			ids[n] = f.obj("claim", "", map[string]any{"n": n})
		}
		o2 := f.obj("claim", "", nil)
		for _, e := range [][3]string{{"a", "b", "depends_on"}, {"b", "c", "depends_on"}, {"c", "a", "depends_on"},
			{"d", "a", "depends_on"}, {"c", "e", "depends_on"}, {"b", "h", "depends_on"}, {"h", "f", "depends_on"},
			{"f", "g", "depends_on"}, {"g", "f", "depends_on"}, {"x", "y", "supports"}, {"y", "x", "supports"}} {
			f.edge(ids[e[0]], ids[e[1]], e[2])
		}
		g := &sweeper.GraphHealth{Tasks: f.st.Tasks, Objects: f.st.Objects, Edges: v}
		if g.Details() != nil {
			t.Fatal("details before the first pass")
		}
		f.sweep(g, 2+5) // two orphans, five objects on cycles
		r := report(t, g)
		a, b, c, ff, gg := ids["a"], ids["b"], ids["c"], ids["f"], ids["g"]
		want := sweeper.GraphReport{Objects: 13, Edges: 11, Orphans: 2, DanglingEdges: 0, CycleMembers: 5,
			Cycles: [][]int64{{a, b, c, a}, {ff, gg, ff}}, EnrichEnqueued: 2}
		if got, _ := json.Marshal(r); string(got) != string(mustJSON(t, want)) {
			t.Fatalf("report %s, want %s", got, mustJSON(t, want))
		}
		if d, ok := g.Details().(sweeper.GraphReport); !ok || d.Orphans != 2 {
			t.Fatalf("details %#v", g.Details())
		}
		p, k := f.tasks(cks.TaskTypeEnrich)
		wantStrings(t, "payloads", p, []string{fmt.Sprintf(`{"object_id":%d}`, o1), fmt.Sprintf(`{"object_id":%d}`, o2)})
		wantStrings(t, "keys", k, []string{fmt.Sprintf("enrich:%d", o1), fmt.Sprintf("enrich:%d", o2)})

		// Second pass: same counts, no new tasks.
		f.sweep(g, 7)
		if r := report(t, g); r.EnrichEnqueued != 0 || r.Orphans != 2 {
			t.Fatalf("second pass %+v", r)
		}
		// Linking an orphan and breaking a cycle show in the next pass.
		f.edge(o1, ids["x"], "related_to")
		f.sweep(g, 1+5)
		if r := report(t, g); r.Orphans != 1 || r.Edges != 12 {
			t.Fatalf("after linking: %+v", r)
		}
	})
}

// TestGraphHealthDangling uses an edge lister that invents edges to missing
// objects, which the backends' foreign keys cannot hold.
func TestGraphHealthDangling(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newKFix(t, open)
		v := f.versions()
		a := f.obj("claim", "", nil)
		b := f.obj("claim", "", nil)
		f.edge(a, b, "depends_on")
		extra := []cks.Edge{{ID: 1 << 40, Src: a, Dst: 1 << 40, BaseType: "cites"},
			{ID: 1<<40 + 1, Src: 1<<40 + 1, Dst: 1<<40 + 2, BaseType: "cites"}}
		g := &sweeper.GraphHealth{Tasks: f.st.Tasks, Objects: f.st.Objects, Edges: edgesFunc(func(ctx context.Context, after int64, limit int) ([]cks.Edge, error) {
			es, err := v.ListEdges(ctx, after, limit)
			if err != nil || len(es) == limit {
				return es, err
			}
			for _, e := range extra {
				if e.ID > after {
					es = append(es, e)
				}
			}
			return es, nil
		})}
		f.sweep(g, 2)
		if r := report(t, g); r.DanglingEdges != 2 || r.Orphans != 0 || r.Edges != 3 {
			t.Fatalf("report %+v", r)
		}
	})
}

type edgesFunc func(ctx context.Context, after int64, limit int) ([]cks.Edge, error)

func (f edgesFunc) ListEdges(ctx context.Context, after int64, limit int) ([]cks.Edge, error) {
	return f(ctx, after, limit)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// report is g's report of its last successful pass, as the runner records
// it (Details), or fails the test before the first.
func report(t *testing.T, g *sweeper.GraphHealth) sweeper.GraphReport {
	t.Helper()
	r, ok := g.Details().(sweeper.GraphReport)
	if !ok {
		t.Fatalf("details %#v, want a GraphReport", g.Details())
	}
	return r
}
