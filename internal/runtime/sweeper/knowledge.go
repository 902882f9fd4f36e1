package sweeper

// The four knowledge sweepers (issue 8, DESIGN §7): fork_detection,
// contradiction, inference_staleness and graph_health. Each pages through the
// knowledge store in pages of cks.MaxListLimit and enqueues work for the
// standalone agents (Fork Resolution, Critic, Enrichment) with a dedupe key,
// so that several hubs sweeping one store enqueue each piece of work once: a
// live task with the same key is returned by Enqueue instead of a new one.
// Each pass returns the number of tasks it created (graph_health: the number of
// problems it found, see GraphHealth).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cks-dev/cks"
)

// Ids of the knowledge sweepers.
const (
	ForkDetectionID      = "fork_detection"
	ContradictionID      = "contradiction"
	InferenceStalenessID = "inference_staleness"
	GraphHealthID        = "graph_health"
)

// maxDedupeKey bounds a dedupe key; a longer one (an inference with many
// premises) is replaced by the hash of its variable part, which keeps it
// unique and within the index limits of both backends.
const maxDedupeKey = 512

// ErrNoVersions: the store does not implement knowledge.Service, which the
// fork_detection and graph_health sweepers need.
var ErrNoVersions = errors.New("the store does not implement object versions (*knowledge.Service)")

// Detailer is implemented by a sweeper whose passes produce more than a
// count. The runner calls Details after every completed pass and records the
// value in Status.Details (JSON "details"); it must be safe to call
// concurrently with SweepOnce and must return a value that is not modified
// afterwards (nil before the first pass).
type Detailer interface {
	Details() any
}

// TaskEnqueuer is what the knowledge sweepers need of the task ledger.
type TaskEnqueuer interface {
	Enqueue(ctx context.Context, n cks.NewTask) (cks.Task, bool, error)
}

// ForkLister lists forked objects (knowledge.Service).
type ForkLister interface {
	ForkedObjects(ctx context.Context, after int64, limit int) ([]cks.Fork, error)
}

// ObjectLister lists objects (knowledge.Service).
type ObjectLister interface {
	ListObjects(ctx context.Context, f cks.ObjectFilter) (cks.ObjectPage, error)
}

// ObjectReader lists and reads objects (knowledge.Service).
type ObjectReader interface {
	ObjectLister
	GetObject(ctx context.Context, id int64) (cks.Object, error)
}

// EdgeLister lists edges (knowledge.Service).
type EdgeLister interface {
	ListEdges(ctx context.Context, after int64, limit int) ([]cks.Edge, error)
}

// pageSize is the page of every listing the knowledge sweepers make.
const pageSize = cks.MaxListLimit

// enqueue enqueues one task and reports whether it was created.
func enqueue(ctx context.Context, q TaskEnqueuer, id, typ, title string, payload any, key string) (bool, error) {
	p, err := json.Marshal(payload)
	if err != nil {
		return false, fmt.Errorf("encode %s payload: %w", typ, err)
	}
	// Every key names a state that cannot come back (a fork's heads, a
	// pair of claims, premise hashes, an orphan): once ever, so a sweep
	// racing the task's completion on another hub enqueues nothing.
	_, created, err := q.Enqueue(ctx, cks.NewTask{Type: typ, Title: title, Payload: p, DedupeKey: key,
		DedupeOnce: true, CreatedBy: "sweeper:" + id})
	if err != nil {
		return false, fmt.Errorf("enqueue %s (%s): %w", typ, key, err)
	}
	return created, nil
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ",")
}

// forEachObject pages through the objects of kinds (all kinds when empty).
func forEachObject(ctx context.Context, l ObjectLister, kinds []string, f func([]cks.Object) error) error {
	var after int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		page, err := l.ListObjects(ctx, cks.ObjectFilter{Kinds: kinds, After: after, Limit: pageSize})
		if err != nil {
			return fmt.Errorf("list objects after %d: %w", after, err)
		}
		if len(page.Objects) > 0 {
			if err := f(page.Objects); err != nil {
				return err
			}
		}
		if page.Next == 0 || len(page.Objects) == 0 {
			return nil
		}
		after = page.Next
	}
}

// ---------------------------------------------------------------------------
// fork_detection

// ForkDetection enqueues a resolve_fork task for every object with more than
// one head version. The payload is {"object_id": N, "heads": [numbers
// ascending]} and the dedupe key "resolve_fork:<object>:v<h1>,v<h2>,…": a
// fork already waiting for resolution is not enqueued again, and a fork that
// changed (a third head) is a new task. The heads are version numbers within
// the object; the "v" keeps them apart from the keys of forks found when
// versions were numbered across all objects ("resolve_fork:7:12,15"), which
// are once-ever too and would otherwise block a fork of the same digits.
// Memory: one page of forks.
type ForkDetection struct {
	Tasks TaskEnqueuer
	// Forks is the store's version history; nil (a store without
	// knowledge.Service) makes every pass fail with ErrNoVersions.
	Forks ForkLister
}

// ID returns "fork_detection".
func (ForkDetection) ID() string { return ForkDetectionID }

// SweepOnce enqueues a task per fork and returns how many it created.
func (s ForkDetection) SweepOnce(ctx context.Context) (int, error) {
	if s.Forks == nil {
		return 0, fmt.Errorf("%s: %w", ForkDetectionID, ErrNoVersions)
	}
	created := 0
	var after int64
	for {
		if err := ctx.Err(); err != nil {
			return created, err
		}
		forks, err := s.Forks.ForkedObjects(ctx, after, pageSize)
		if err != nil {
			return created, fmt.Errorf("%s: list forks after object %d: %w", ForkDetectionID, after, err)
		}
		for _, f := range forks {
			heads := slices.Clone(f.Heads)
			slices.Sort(heads)
			heads = slices.Compact(heads)
			if len(heads) < 2 {
				continue
			}
			key := fmt.Sprintf("%s:%d:v%s", cks.TaskTypeResolveFork, f.ObjectID, strings.ReplaceAll(joinIDs(heads), ",", ",v"))
			ok, err := enqueue(ctx, s.Tasks, ForkDetectionID, cks.TaskTypeResolveFork,
				fmt.Sprintf("Resolve the fork of object %d (%d heads)", f.ObjectID, len(heads)),
				map[string]any{"object_id": f.ObjectID, "heads": heads}, key)
			if err != nil {
				return created, fmt.Errorf("%s: %w", ForkDetectionID, err)
			}
			if ok {
				created++
			}
		}
		if len(forks) < pageSize {
			return created, nil
		}
		after = forks[len(forks)-1].ObjectID
	}
}

// ---------------------------------------------------------------------------
// contradiction

// Contradiction finds claims that contradict each other and enqueues a
// critique task per pair.
//
// A claim is an object of kind "claim" whose content has the string fields
// subject, predicate and value. Two claims contradict when their subjects and
// their predicates are equal after trimming white space and ignoring case, and
// their values are not (compared the same way), and neither claim's
// current_status is "disputed" (the Critic marks the losing claim disputed,
// which ends the contradiction). Claims lacking one of the fields, or with a
// field that is not a string, are ignored. Every contradicting pair (a < b) is
// one task of type critique with payload {"claims": [a, b]} and dedupe key
// "critique:<a>,<b>".
//
// Memory: claims are grouped by (subject, predicate) across pages, so a pass
// holds an index of every claim: its id and a 16-byte hash of its key and of
// its value (no content), about 50 bytes a claim.
type Contradiction struct {
	Tasks   TaskEnqueuer
	Objects ObjectLister
}

// ID returns "contradiction".
func (Contradiction) ID() string { return ContradictionID }

type claimRef struct {
	id    int64
	value [16]byte
}

func hash16(s string) [16]byte {
	sum := sha256.Sum256([]byte(s))
	var h [16]byte
	copy(h[:], sum[:16])
	return h
}

func norm(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// SweepOnce enqueues a critique per contradicting pair and returns how many
// tasks it created.
func (s Contradiction) SweepOnce(ctx context.Context) (int, error) {
	groups := map[[16]byte][]claimRef{}
	err := forEachObject(ctx, s.Objects, []string{cks.KindClaim}, func(objs []cks.Object) error {
		for _, o := range objs {
			if o.Kind != cks.KindClaim || o.Status == cks.StatusDisputed {
				continue
			}
			var c struct {
				Subject, Predicate, Value *string
			}
			if json.Unmarshal(o.Content, &c) != nil || c.Subject == nil || c.Predicate == nil || c.Value == nil {
				continue
			}
			k := hash16(norm(*c.Subject) + "\x00" + norm(*c.Predicate))
			groups[k] = append(groups[k], claimRef{id: o.ID, value: hash16(norm(*c.Value))})
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", ContradictionID, err)
	}
	var pairs [][2]int64
	for _, g := range groups {
		for i := range g {
			for j := i + 1; j < len(g); j++ {
				if g[i].value != g[j].value {
					a, b := min(g[i].id, g[j].id), max(g[i].id, g[j].id)
					pairs = append(pairs, [2]int64{a, b})
				}
			}
		}
	}
	slices.SortFunc(pairs, func(x, y [2]int64) int {
		if c := x[0] - y[0]; c != 0 {
			return int(min(max(c, -1), 1))
		}
		return int(min(max(x[1]-y[1], -1), 1))
	})
	created := 0
	for _, p := range pairs {
		key := fmt.Sprintf("%s:%d,%d", cks.TaskTypeCritique, p[0], p[1])
		ok, err := enqueue(ctx, s.Tasks, ContradictionID, cks.TaskTypeCritique,
			fmt.Sprintf("Critique contradicting claims %d and %d", p[0], p[1]),
			map[string]any{"claims": []int64{p[0], p[1]}}, key)
		if err != nil {
			return created, fmt.Errorf("%s: %w", ContradictionID, err)
		}
		if ok {
			created++
		}
	}
	return created, nil
}

// ---------------------------------------------------------------------------
// inference_staleness

// InferenceStaleness finds inferences whose premises changed since they were
// derived and enqueues a rederive task for each.
//
// An inference is an object of kind "inference" whose content has
// "premises": {"<object id>": "<content hash when derived>", …}. It is stale
// when a premise's current content_hash differs from the recorded one, or the
// premise object no longer exists. Inferences without premises, or whose
// premises are not such a map with numeric ids and string hashes, are ignored.
// A stale inference gets one task of type rederive with payload
// {"object_id": N} and dedupe key "rederive:<id>:<current premise hashes,
// sorted, joined with ','>" (a missing premise counts as "missing"); when that
// key would exceed 512 bytes its hash part is replaced by "sha256:" and the
// SHA-256 of it. A premise that changes again while the task is waiting is a
// new key, and so a new task. Memory: one page of inferences and the current
// hashes of their premises.
type InferenceStaleness struct {
	Tasks   TaskEnqueuer
	Objects ObjectReader
}

// ID returns "inference_staleness".
func (InferenceStaleness) ID() string { return InferenceStalenessID }

// missingPremise stands for the hash of a premise that no longer exists.
const missingPremise = "missing"

// SweepOnce enqueues a rederive task per stale inference and returns how many
// it created.
func (s InferenceStaleness) SweepOnce(ctx context.Context) (int, error) {
	created := 0
	err := forEachObject(ctx, s.Objects, []string{cks.KindInference}, func(objs []cks.Object) error {
		current := map[int64]string{} // premise id → hash, for this page
		hashOf := func(id int64) (string, error) {
			if h, ok := current[id]; ok {
				return h, nil
			}
			o, err := s.Objects.GetObject(ctx, id)
			switch {
			case errors.Is(err, cks.ErrNotFound):
				current[id] = missingPremise
			case err != nil:
				return "", fmt.Errorf("read premise %d: %w", id, err)
			default:
				current[id] = o.ContentHash
			}
			return current[id], nil
		}
		for _, o := range objs {
			if o.Kind != cks.KindInference {
				continue
			}
			var c struct {
				Premises map[string]string `json:"premises"`
			}
			if json.Unmarshal(o.Content, &c) != nil || len(c.Premises) == 0 {
				continue
			}
			stale, valid := false, true
			hashes := make([]string, 0, len(c.Premises))
			for k, recorded := range c.Premises {
				pid, err := strconv.ParseInt(k, 10, 64)
				if err != nil || pid <= 0 {
					valid = false
					break
				}
				h, err := hashOf(pid)
				if err != nil {
					return err
				}
				if h != recorded {
					stale = true
				}
				hashes = append(hashes, h)
			}
			if !valid || !stale {
				continue
			}
			slices.Sort(hashes)
			key := fmt.Sprintf("%s:%d:%s", cks.TaskTypeRederive, o.ID, strings.Join(hashes, ","))
			if len(key) > maxDedupeKey {
				sum := sha256.Sum256([]byte(strings.Join(hashes, ",")))
				key = fmt.Sprintf("%s:%d:sha256:%s", cks.TaskTypeRederive, o.ID, hex.EncodeToString(sum[:]))
			}
			ok, err := enqueue(ctx, s.Tasks, InferenceStalenessID, cks.TaskTypeRederive,
				fmt.Sprintf("Re-derive inference %d (premises changed)", o.ID),
				map[string]any{"object_id": o.ID}, key)
			if err != nil {
				return err
			}
			if ok {
				created++
			}
		}
		return nil
	})
	if err != nil {
		err = fmt.Errorf("%s: %w", InferenceStalenessID, err)
	}
	return created, err
}

// ---------------------------------------------------------------------------
// graph_health

// GraphHealth checks the shape of the knowledge graph.
//
// It counts:
//   - orphans: objects with no edge at all, in either direction. Objects of
//     kind "question" are not orphans: a question stands alone by design (it
//     is where research starts, and its claims link to it later). Each orphan
//     gets an enrich task (payload {"object_id": N}, dedupe key
//     "enrich:<id>") for the Enrichment agent to link it to related objects.
//   - dangling edges: edges with an end that is not an object. The foreign keys
//     of both backends make this impossible; it is counted as a check on them.
//   - cycles among depends_on edges: Kahn's topological sort removes every
//     object that is not on a cycle or between cycles (forwards, then
//     backwards on what is left); the strongly connected components of the
//     rest are the cycles. It reports how many objects lie on a cycle and up
//     to 10 example cycles as id paths (first id repeated at the end).
//
// The pass's count is orphans + dangling edges + objects on cycles; the
// counts and examples are its Details, shown in the sweeper status.
//
// Memory: unlike the other sweepers, a pass holds the whole graph's shape: a
// small entry per object that has an edge, and the depends_on adjacency (two
// ids per depends_on edge). Edges are read first and objects after, so an
// edge never points to an object the pass has not seen (objects are not
// deleted).
type GraphHealth struct {
	Tasks   TaskEnqueuer
	Objects ObjectLister
	// Edges is the store's edge listing; nil (a store without
	// knowledge.Service) makes every pass fail with ErrNoVersions.
	Edges EdgeLister

	mu   sync.Mutex
	last *GraphReport
}

// MaxCycleExamples bounds GraphReport.Cycles.
const MaxCycleExamples = 10

// GraphReport is what one graph_health pass found: its Details.
type GraphReport struct {
	Objects       int `json:"objects"`
	Edges         int `json:"edges"`
	Orphans       int `json:"orphans"`
	DanglingEdges int `json:"dangling_edges"`
	// CycleMembers is the number of objects on a depends_on cycle;
	// Cycles up to MaxCycleExamples of them as id paths a → … → a.
	CycleMembers int       `json:"cycle_members"`
	Cycles       [][]int64 `json:"cycles"`
	// EnrichEnqueued is the number of enrich tasks created for orphans
	// (the others were already waiting).
	EnrichEnqueued int `json:"enrich_enqueued"`
}

// ID returns "graph_health".
func (*GraphHealth) ID() string { return GraphHealthID }

// Details returns the report of the last successful pass (a *GraphReport
// value copy), or nil before the first.
func (g *GraphHealth) Details() any {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		return nil
	}
	r := *g.last
	return r
}

// Node flags of the graph_health pass.
const (
	nodeTouched uint8 = 1 << iota // an end of some edge
	nodeSeen                      // listed as an object
)

// SweepOnce checks the graph, enqueues enrich tasks for orphans and returns
// orphans + dangling edges + objects on cycles.
func (g *GraphHealth) SweepOnce(ctx context.Context) (int, error) {
	if g.Edges == nil {
		return 0, fmt.Errorf("%s: %w", GraphHealthID, ErrNoVersions)
	}
	var rep GraphReport
	nodes := map[int64]uint8{}
	deps := map[int64][]int64{} // depends_on: src → dsts
	var after int64
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		es, err := g.Edges.ListEdges(ctx, after, pageSize)
		if err != nil {
			return 0, fmt.Errorf("%s: list edges after %d: %w", GraphHealthID, after, err)
		}
		for _, e := range es {
			rep.Edges++
			nodes[e.Src] |= nodeTouched
			nodes[e.Dst] |= nodeTouched
			if e.BaseType == cks.BaseDependsOn {
				deps[e.Src] = append(deps[e.Src], e.Dst)
			}
		}
		if len(es) < pageSize {
			break
		}
		after = es[len(es)-1].ID
	}
	var orphans []int64
	err := forEachObject(ctx, g.Objects, nil, func(objs []cks.Object) error {
		for _, o := range objs {
			rep.Objects++
			if f, ok := nodes[o.ID]; ok {
				nodes[o.ID] = f | nodeSeen
			} else if o.Kind != cks.KindQuestion {
				orphans = append(orphans, o.ID)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", GraphHealthID, err)
	}
	rep.Orphans = len(orphans)
	missing := false
	for _, f := range nodes {
		if f&nodeSeen == 0 {
			missing = true
			break
		}
	}
	if missing {
		// Rare (a broken foreign key): read the edges again to count the
		// edges, not the ends, that dangle.
		after = 0
		for {
			es, err := g.Edges.ListEdges(ctx, after, pageSize)
			if err != nil {
				return 0, fmt.Errorf("%s: list edges after %d: %w", GraphHealthID, after, err)
			}
			for _, e := range es {
				if nodes[e.Src]&nodeSeen == 0 || nodes[e.Dst]&nodeSeen == 0 {
					rep.DanglingEdges++
				}
			}
			if len(es) < pageSize {
				break
			}
			after = es[len(es)-1].ID
		}
	}
	clear(nodes)
	rep.CycleMembers, rep.Cycles = dependsCycles(deps)
	for _, id := range orphans {
		ok, err := enqueue(ctx, g.Tasks, GraphHealthID, cks.TaskTypeEnrich,
			fmt.Sprintf("Enrich orphan object %d", id), map[string]any{"object_id": id},
			fmt.Sprintf("%s:%d", cks.TaskTypeEnrich, id))
		if err != nil {
			return rep.Orphans + rep.DanglingEdges + rep.CycleMembers, fmt.Errorf("%s: %w", GraphHealthID, err)
		}
		if ok {
			rep.EnrichEnqueued++
		}
	}
	if rep.Cycles == nil {
		rep.Cycles = [][]int64{}
	}
	g.mu.Lock()
	g.last = &rep
	g.mu.Unlock()
	return rep.Orphans + rep.DanglingEdges + rep.CycleMembers, nil
}

// dependsCycles returns the number of nodes on a cycle of the directed graph
// adj and up to MaxCycleExamples cycles (one per strongly connected
// component, smallest ids first) as paths a → … → a.
func dependsCycles(adj map[int64][]int64) (members int, cycles [][]int64) {
	// Kahn forwards: strip nodes with no remaining predecessor.
	indeg := map[int64]int{}
	for s, ds := range adj {
		if _, ok := indeg[s]; !ok {
			indeg[s] = 0
		}
		for _, d := range ds {
			indeg[d]++
		}
	}
	alive := map[int64]bool{}
	var queue []int64
	for n, d := range indeg {
		alive[n] = true
		if d == 0 {
			queue = append(queue, n)
		}
	}
	for len(queue) > 0 {
		n := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		delete(alive, n)
		for _, d := range adj[n] {
			if indeg[d]--; indeg[d] == 0 {
				queue = append(queue, d)
			}
		}
	}
	if len(alive) == 0 {
		return 0, nil
	}
	// Kahn backwards on the rest: strip nodes with no remaining successor
	// (downstream of a cycle but not on one).
	radj := map[int64][]int64{}
	outdeg := map[int64]int{}
	for n := range alive {
		outdeg[n] += 0
		for _, d := range adj[n] {
			if alive[d] {
				outdeg[n]++
				radj[d] = append(radj[d], n)
			}
		}
	}
	for n, d := range outdeg {
		if d == 0 {
			queue = append(queue, n)
		}
	}
	for len(queue) > 0 {
		n := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		delete(alive, n)
		for _, p := range radj[n] {
			if outdeg[p]--; outdeg[p] == 0 {
				queue = append(queue, p)
			}
		}
	}
	// What is left is on cycles or on paths between them: its strongly
	// connected components with a cycle are the answer.
	rest := make([]int64, 0, len(alive))
	for n := range alive {
		rest = append(rest, n)
	}
	slices.Sort(rest)
	succ := func(n int64) []int64 {
		var out []int64
		for _, d := range adj[n] {
			if alive[d] {
				out = append(out, d)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	for _, comp := range sccs(rest, succ) {
		self := len(comp) == 1 && slices.Contains(adj[comp[0]], comp[0])
		if len(comp) < 2 && !self {
			continue
		}
		members += len(comp)
		if len(cycles) < MaxCycleExamples {
			cycles = append(cycles, cycleIn(comp, succ))
		}
	}
	slices.SortFunc(cycles, func(a, b []int64) int { return int(min(max(a[0]-b[0], -1), 1)) })
	return members, cycles
}

// sccs returns the strongly connected components of the graph on nodes
// (Tarjan's algorithm, iterative), each sorted ascending.
func sccs(nodes []int64, succ func(int64) []int64) [][]int64 {
	index := map[int64]int{}
	low := map[int64]int{}
	onStack := map[int64]bool{}
	var stack []int64
	var out [][]int64
	next := 0
	type frame struct {
		n    int64
		succ []int64
		i    int
	}
	for _, root := range nodes {
		if _, ok := index[root]; ok {
			continue
		}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		call := []frame{{n: root, succ: succ(root)}}
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.i < len(f.succ) {
				w := f.succ[f.i]
				f.i++
				if _, ok := index[w]; !ok {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{n: w, succ: succ(w)})
				} else if onStack[w] {
					low[f.n] = min(low[f.n], index[w])
				}
				continue
			}
			n := f.n
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].n
				low[p] = min(low[p], low[n])
			}
			if low[n] == index[n] {
				var comp []int64
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp = append(comp, w)
					if w == n {
						break
					}
				}
				slices.Sort(comp)
				out = append(out, comp)
			}
		}
	}
	return out
}

// cycleIn returns a shortest cycle through the smallest node of the strongly
// connected component comp, as a path a → … → a (breadth-first search).
func cycleIn(comp []int64, succ func(int64) []int64) []int64 {
	in := map[int64]bool{}
	for _, n := range comp {
		in[n] = true
	}
	start := comp[0]
	prev := map[int64]int64{}
	queue := []int64{start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, d := range succ(n) {
			if !in[d] {
				continue
			}
			if d == start {
				path := []int64{start}
				for m := n; m != start; m = prev[m] {
					path = append(path, m)
				}
				slices.Reverse(path[1:])
				return append(path, start)
			}
			if _, seen := prev[d]; !seen {
				prev[d] = n
				queue = append(queue, d)
			}
		}
	}
	return []int64{start, start} // unreachable for a component with a cycle
}
