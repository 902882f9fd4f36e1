package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/llm"
)

// ConflictModel is an optional method of an llm.Model: a model that
// implements it decides the true conflicts of the Fork Resolution agent's
// merges (the arguments and result are those of knowledge.Resolver; the
// result must be one JSON value, or empty to leave the field out). No
// provider implements it yet, so today every conflict is decided by the
// offline rule, knowledge.DeterministicResolver.
type ConflictModel interface {
	ResolveConflict(ctx context.Context, path string, base, ours, theirs json.RawMessage) (json.RawMessage, error)
}

// ForkConfig configures ForkResolver.
type ForkConfig struct {
	// Model decides true conflicts when it implements ConflictModel; when
	// it is nil or does not, knowledge.DeterministicResolver does.
	Model llm.Model
}

// ForkPayload is the payload of a resolve_fork task.
type ForkPayload struct {
	ObjectID int64   `json:"object_id"`
	Heads    []int64 `json:"heads"`
}

// ForkMerged is the result of a resolve_fork task that merged.
type ForkMerged struct {
	Outcome       string  `json:"outcome"` // "merged"
	ObjectID      int64   `json:"object_id"`
	Heads         []int64 `json:"heads"`
	MergeBase     int64   `json:"merge_base"`
	MergedVersion int64   `json:"merged_version"`
	Conflicts     int     `json:"conflicts"`
	RationaleID   int64   `json:"rationale_id"`
}

// MergeRationale is the content of the reasoning node (kind "rationale")
// a merge writes, linked to the object with depends_on/resolves.
type MergeRationale struct {
	Text      string               `json:"text"`
	Conflicts []knowledge.Conflict `json:"conflicts"`
	MergeBase int64                `json:"merge_base"`
	Heads     []int64              `json:"heads"`
	// Resolver names who decided the conflicts: "deterministic" (the
	// offline rule) or the model's name.
	Resolver string `json:"resolver"`
}

// ForkResolver returns the resolver of `cks agent fork_resolution` for
// resolve_fork tasks. It reads the object's current heads: when there is
// only one (the fork was already resolved) or they are not exactly the
// task's heads (a later write or merge changed the fork; the
// fork_detection sweeper enqueues the fork as it now is), the task
// completes as a no-op whose result says so. Otherwise it loads the
// object's version DAG and merges the heads three-way against their merge
// base with knowledge.MergeHeads — field by field, sets add-wins, true
// conflicts decided by cfg.Model when it is a ConflictModel, else by
// knowledge.DeterministicResolver (the side whose canonical JSON sorts
// greater wins, a change beats a deletion: a deterministic choice that
// does not depend on head order) — and records the merge with
// knowledge.Service.MergeVersions (author "fork_resolution", parents = the
// heads) together with a rationale node (MergeRationale) linked to the
// object with depends_on/resolves. A write that lands between the read and
// the merge (ErrConflict) fails the attempt retryably: the next attempt
// sees the new heads and completes as a no-op, and the sweeper enqueues the
// new fork. A bad payload, an unknown object or contents that cannot merge
// fail permanently.
func ForkResolver(st VersionedStore, cfg ForkConfig) worker.Resolver {
	return func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
		var p ForkPayload
		if err := decodePayload(a.Task(), &p); err != nil {
			return worker.Result{}, err
		}
		return resolveFork(ctx, st, cfg, p)
	}
}

func resolveFork(ctx context.Context, st VersionedStore, cfg ForkConfig, p ForkPayload) (worker.Result, error) {
	if p.ObjectID <= 0 || len(p.Heads) == 0 {
		return worker.Result{}, worker.Permanent(fmt.Errorf("resolve_fork: payload needs object_id and heads, got object_id %d, heads %v", p.ObjectID, p.Heads))
	}
	want := slices.Clone(p.Heads)
	slices.Sort(want)
	want = slices.Compact(want)
	cur, err := st.Heads(ctx, p.ObjectID)
	if errors.Is(err, cks.ErrNotFound) {
		return worker.Result{}, worker.Permanent(err)
	}
	if err != nil {
		return worker.Result{}, err
	}
	heads := make([]int64, len(cur))
	for i, h := range cur {
		heads[i] = h.Version
	}
	slices.Sort(heads)
	switch {
	case len(heads) == 1:
		return noopResult("object %d has one head (version %d): the fork was already resolved", p.ObjectID, heads[0]), nil
	case !slices.Equal(heads, want):
		return noopResult("object %d's heads are now %s, not the task's %s: the fork changed since it was found; the sweeper enqueues it as it is now",
			p.ObjectID, versionList(heads), versionList(want)), nil
	}
	all, err := st.ObjectVersions(ctx, p.ObjectID)
	if err != nil {
		return worker.Result{}, err
	}
	parents := make(map[int64][]int64, len(all))
	contents := make(map[int64]json.RawMessage, len(all))
	for _, v := range all {
		parents[v.Version] = v.Parents
		if parents[v.Version] == nil {
			parents[v.Version] = []int64{}
		}
		contents[v.Version] = v.Content
	}
	base, err := knowledge.MergeBase(parents, heads)
	if err != nil {
		return worker.Result{}, worker.Permanent(fmt.Errorf("object %d: %w", p.ObjectID, err))
	}
	resolve, resolverName := conflictResolver(ctx, cfg.Model)
	merged, conflicts, err := knowledge.MergeHeads(parents, contents, heads, resolve)
	if err != nil {
		if errors.Is(err, llm.ErrUnavailable) || ctx.Err() != nil {
			return worker.Result{}, err
		}
		return worker.Result{}, worker.Permanent(fmt.Errorf("object %d: merging %s: %w", p.ObjectID, versionList(heads), err))
	}
	if conflicts == nil {
		conflicts = []knowledge.Conflict{}
	}
	r := MergeRationale{Text: mergeSummary(p.ObjectID, heads, base, conflicts, resolverName),
		Conflicts: conflicts, MergeBase: base, Heads: heads, Resolver: resolverName}
	content, err := json.Marshal(r)
	if err != nil {
		return worker.Result{}, worker.Permanent(err)
	}
	reason := &knowledge.Attachment{
		Object: knowledge.NewObject{Kind: cks.KindRationale, Title: fmt.Sprintf("merge of %s of object %d", versionList(heads), p.ObjectID),
			Content: content, CreatedBy: AuthorForkResolution},
		BaseType: cks.BaseDependsOn, SemanticType: cks.SemResolves,
	}
	v, node, err := st.MergeVersions(ctx, p.ObjectID, heads, merged, AuthorForkResolution, reason)
	if errors.Is(err, cks.ErrConflict) {
		return worker.Result{}, fmt.Errorf("object %d was written while merging %s (retrying: the next attempt sees the new heads): %w",
			p.ObjectID, versionList(heads), err)
	}
	if err != nil {
		return worker.Result{}, err
	}
	out := ForkMerged{Outcome: "merged", ObjectID: p.ObjectID, Heads: heads, MergeBase: base, MergedVersion: v.Version, Conflicts: len(conflicts)}
	if node != nil {
		out.RationaleID = node.ID
	}
	return output(out), nil
}

// conflictResolver is the model's ConflictModel method when it has one,
// else knowledge.DeterministicResolver; the name says which.
func conflictResolver(ctx context.Context, m llm.Model) (knowledge.Resolver, string) {
	if cm, ok := m.(ConflictModel); ok {
		return func(path string, base, ours, theirs json.RawMessage) (json.RawMessage, error) {
			return cm.ResolveConflict(ctx, path, base, ours, theirs)
		}, m.Name()
	}
	return knowledge.DeterministicResolver, "deterministic"
}

func mergeSummary(id int64, heads []int64, base int64, conflicts []knowledge.Conflict, resolver string) string {
	s := fmt.Sprintf("merged %s of object %d three-way against their merge base, version %d", versionList(heads), id, base)
	if len(conflicts) == 0 {
		return s + "; every change merged cleanly (no true conflicts)"
	}
	paths := make([]string, len(conflicts))
	for i, c := range conflicts {
		paths[i] = c.Path
	}
	rule := "the deterministic rule (the value whose canonical JSON sorts greater wins; a change beats a deletion)"
	if resolver != "deterministic" {
		rule = "the model " + resolver
	}
	return fmt.Sprintf("%s; %d true conflict(s) (%s) decided by %s", s, len(conflicts), strings.Join(paths, ", "), rule)
}

// versionList writes version ids as "versions 4, 5".
func versionList(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	if len(ids) == 1 {
		return "version " + parts[0]
	}
	return "versions " + strings.Join(parts, ", ")
}
