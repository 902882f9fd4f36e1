package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// MergeConfig is one run of the merge benchmark.
type MergeConfig struct {
	// Fields is the number of top-level fields of the object (default 1,000).
	Fields int
	// History is how many versions are written before the merges (default 1,000).
	History int
	// Merges is how many forks are made and merged (default 50).
	Merges int
	// Progress, when set, is called with the phase and how far it got.
	Progress func(phase string, done, total int)
}

// MergeResult is what one run measured. A merge is what the Fork
// Resolution agent does for one resolve_fork task: read the heads and the
// whole version history, merge three-way, write the merge version.
type MergeResult struct {
	Fields   int           `json:"fields"`
	History  int           `json:"history"`
	Merges   int           `json:"merges"`
	Rate     float64       `json:"merges_per_s"`
	MergeP50 time.Duration `json:"merge_p50_ns"`
	MergeP99 time.Duration `json:"merge_p99_ns"`
	// Algo is the in-memory part of a merge (LCA and three-way merge).
	AlgoP50 time.Duration `json:"algo_p50_ns"`
}

func fieldsContent(n, gen int, changed func(i int) bool) json.RawMessage {
	m := make(map[string]any, n)
	for i := range n {
		v := fmt.Sprintf("value %d", i)
		if changed(i) {
			v = fmt.Sprintf("value %d at %d", i, gen)
		}
		m[fmt.Sprintf("field_%04d", i)] = v
	}
	m["tags"] = []string{"base", fmt.Sprintf("gen%d", gen%7)}
	b, _ := json.Marshal(m)
	return b
}

// Merge builds an object with cfg.Fields fields and a cfg.History-version
// history, then cfg.Merges times forks it (two writes from one head, each
// changing other fields, one field on both sides) and merges the fork as
// the Fork Resolution agent does, timing each merge.
func Merge(ctx context.Context, st *backend.Backend, cfg MergeConfig) (MergeResult, error) {
	if cfg.Fields <= 0 {
		cfg.Fields = 1000
	}
	if cfg.History <= 0 {
		cfg.History = 1000
	}
	if cfg.Merges <= 0 {
		cfg.Merges = 50
	}
	res := MergeResult{Fields: cfg.Fields, History: cfg.History, Merges: cfg.Merges}
	none := func(int) bool { return false }
	obj, err := st.Objects.CreateObject(ctx, knowledge.NewObject{Kind: "document", Title: "bench", Content: fieldsContent(cfg.Fields, 0, none), CreatedBy: "bench"})
	if err != nil {
		return res, err
	}
	head := obj.HeadVersion
	for g := 1; g < cfg.History; g++ {
		v, err := st.Objects.WriteVersion(ctx, obj.ID, head, fieldsContent(cfg.Fields, g, func(i int) bool { return i%50 == g%50 }), "bench")
		if err != nil {
			return res, err
		}
		head = v.Version
		if cfg.Progress != nil && g%100 == 0 {
			cfg.Progress("history", g, cfg.History)
		}
	}
	var merges, algos []time.Duration
	begin := time.Now()
	for m := range cfg.Merges {
		g := cfg.History + 2*m
		if _, err := st.Objects.WriteVersion(ctx, obj.ID, head, fieldsContent(cfg.Fields, g, func(i int) bool { return i%10 == 1 || i == 0 }), "alice"); err != nil {
			return res, err
		}
		if _, err := st.Objects.WriteVersion(ctx, obj.ID, head, fieldsContent(cfg.Fields, g+1, func(i int) bool { return i%10 == 2 || i == 0 }), "bob"); err != nil {
			return res, err
		}
		start := time.Now()
		heads, err := st.Objects.Heads(ctx, obj.ID)
		if err != nil {
			return res, err
		}
		all, err := st.Objects.ObjectVersions(ctx, obj.ID)
		if err != nil {
			return res, err
		}
		algo := time.Now()
		parents := make(map[int64][]int64, len(all))
		contents := make(map[int64]json.RawMessage, len(all))
		for _, v := range all {
			parents[v.Version], contents[v.Version] = v.Parents, v.Content
		}
		ids := make([]int64, len(heads))
		for i, h := range heads {
			ids[i] = h.Version
		}
		merged, conflicts, err := knowledge.MergeHeads(parents, contents, ids, knowledge.DeterministicResolver)
		if err != nil {
			return res, err
		}
		algos = append(algos, time.Since(algo))
		if len(conflicts) == 0 {
			return res, fmt.Errorf("merge %d: no conflict (field_0000 was changed on both sides)", m)
		}
		v, _, err := st.Objects.MergeVersions(ctx, obj.ID, ids, merged, "fork_resolution", nil)
		if err != nil {
			return res, err
		}
		merges = append(merges, time.Since(start))
		head = v.Version
		if cfg.Progress != nil {
			cfg.Progress("merge", m+1, cfg.Merges)
		}
	}
	total := time.Since(begin)
	slices.Sort(merges)
	slices.Sort(algos)
	res.Rate = float64(cfg.Merges) / total.Seconds()
	res.MergeP50, res.MergeP99 = percentile(merges, 0.5), percentile(merges, 0.99)
	res.AlgoP50 = percentile(algos, 0.5)
	return res, nil
}

// SweepConfig is one run of the knowledge sweeper benchmark.
type SweepConfig struct {
	// Objects is how many objects are written first (default 100,000): a
	// mix of claims (some contradicting), inferences, questions, and nodes
	// linked by edges.
	Objects  int
	Progress func(phase string, done, total int)
}

// SweepResult is the time of one pass of each knowledge sweeper over the
// store (the first pass, which enqueues what it finds).
type SweepResult struct {
	Objects int                      `json:"objects"`
	Pass    map[string]time.Duration `json:"pass_ns"`
	Found   map[string]int           `json:"found"`
}

// Sweep fills st with cfg.Objects objects and times one pass of each of the
// four knowledge sweepers.
func Sweep(ctx context.Context, st *backend.Backend, cfg SweepConfig) (SweepResult, error) {
	if cfg.Objects <= 0 {
		cfg.Objects = 100_000
	}
	res := SweepResult{Objects: cfg.Objects, Pass: map[string]time.Duration{}, Found: map[string]int{}}
	// Objects form chains of depends_on edges; every 1,000th starts a new
	// chain with nothing (an orphan), every 4,000th claim contradicts the
	// claim before it, every 10,000th object closes a cycle of two.
	var prev int64
	for i := range cfg.Objects {
		var n knowledge.NewObject
		switch i % 10 {
		case 0, 1, 2, 3:
			subject, value := fmt.Sprintf("thing %d", i), "yes"
			if i%4000 == 1 {
				subject, value = fmt.Sprintf("thing %d", i-1), "no"
			}
			n = knowledge.NewObject{Kind: "claim", Content: json.RawMessage(fmt.Sprintf(
				`{"subject":%q,"predicate":"is","value":%q}`, subject, value))}
		case 4:
			n = knowledge.NewObject{Kind: "inference", Content: json.RawMessage(fmt.Sprintf(`{"statement":"s%d","premises":{}}`, i))}
		default:
			n = knowledge.NewObject{Kind: "note", Content: json.RawMessage(fmt.Sprintf(`{"text":"note %d"}`, i))}
		}
		n.CreatedBy = "bench"
		o, err := st.Objects.CreateObject(ctx, n)
		if err != nil {
			return res, err
		}
		var edges []knowledge.NewEdge
		if i%1000 != 0 && prev > 0 {
			edges = append(edges, knowledge.NewEdge{Src: o.ID, Dst: prev, BaseType: "depends_on"})
			if i%10000 == 5 {
				edges = append(edges, knowledge.NewEdge{Src: prev, Dst: o.ID, BaseType: "depends_on"})
			}
		}
		if len(edges) > 0 {
			if _, err := st.Objects.AddEdges(ctx, edges); err != nil {
				return res, err
			}
		}
		prev = o.ID
		if cfg.Progress != nil && (i+1)%5000 == 0 {
			cfg.Progress("objects", i+1, cfg.Objects)
		}
	}
	for _, s := range []sweeper.Sweeper{
		sweeper.ForkDetection{Tasks: st.Tasks, Forks: st.Objects},
		sweeper.Contradiction{Tasks: st.Tasks, Objects: st.Objects},
		sweeper.InferenceStaleness{Tasks: st.Tasks, Objects: st.Objects},
		&sweeper.GraphHealth{Tasks: st.Tasks, Objects: st.Objects, Edges: st.Objects},
	} {
		begin := time.Now()
		n, err := s.SweepOnce(ctx)
		if err != nil {
			return res, fmt.Errorf("%s: %w", s.ID(), err)
		}
		res.Pass[s.ID()] = time.Since(begin)
		res.Found[s.ID()] = n
	}
	return res, nil
}
