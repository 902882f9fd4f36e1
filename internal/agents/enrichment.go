package agents

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// The offline rule of enrich tasks.
const (
	// EnrichMaxLinks is how many related_to edges one enrich task writes.
	EnrichMaxLinks = 5
	// EnrichMinShared and EnrichMinScore are the threshold of relatedness:
	// at least this many shared terms and a Jaccard similarity of the two
	// term sets of at least this much.
	EnrichMinShared = 2
	EnrichMinScore  = 0.2
	// BaseRelatedTo and SemRelatedTo are the types of the edges enrich
	// writes: a structural type of its own, so the related_to links make
	// an object no longer an orphan but never take part in the depends_on
	// cycle check, and the same semantic type.
	BaseRelatedTo = "related_to"
	SemRelatedTo  = "related_to"
)

// Enrichment returns the resolver of `cks agent enrichment`, for two task
// types (other types fail permanently):
//
//   - rederive {"object_id"}: an inference, content {"statement", "premises":
//     {"<id>": "<premise's content hash when derived>"}}, whose premises
//     changed. Offline rule: the statement (and every other field) is kept,
//     the premise hashes are refreshed to the premises' current ones and a
//     "derivation" field (Derivation) names the premise versions used; the
//     result is a new version (knowledge.Service.WriteVersion, author
//     "enrichment") based on the inference's latest version. An inference
//     whose recorded hashes are all current is a no-op.
//   - enrich {"object_id"}: related_to edges from the object to up to
//     EnrichMaxLinks objects related to it by term overlap (see enrich).
//     None related is a no-op. A missing title is not filled: titles are
//     not content and the store has no write for them.
func Enrichment(st VersionedStore) worker.Resolver {
	return func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
		t := a.Task()
		var p ObjectPayload
		switch t.Type {
		case cks.TaskTypeRederive:
			if err := decodePayload(t, &p); err != nil {
				return worker.Result{}, err
			}
			return rederive(ctx, st, p.ObjectID)
		case cks.TaskTypeEnrich:
			if err := decodePayload(t, &p); err != nil {
				return worker.Result{}, err
			}
			return enrich(ctx, st, p.ObjectID)
		}
		return worker.Result{}, worker.Permanent(fmt.Errorf("the enrichment agent works %s and %s tasks, not %q", cks.TaskTypeRederive, cks.TaskTypeEnrich, t.Type))
	}
}

// ObjectPayload is the payload of rederive and enrich tasks.
type ObjectPayload struct {
	ObjectID int64 `json:"object_id"`
}

// Derivation is the "derivation" field a re-derivation writes into an
// inference's content.
type Derivation struct {
	// Rule names how the inference was re-derived.
	Rule string `json:"rule"`
	// PremiseVersions are the head versions of the premises whose hashes
	// the new version records ("<id>": version id).
	PremiseVersions map[string]int64 `json:"premise_versions"`
	// Replaced are the premise hashes the re-derivation replaced.
	Replaced map[string]string `json:"replaced"`
	// BasedOn is the inference's version the new one was written from.
	BasedOn int64 `json:"based_on"`
}

// MissingPremise is the hash a re-derivation records for a premise that
// no longer exists (the inference_staleness sweeper's marker for it).
const MissingPremise = "missing"

// RederiveRule is Derivation.Rule of the offline re-derivation.
const RederiveRule = "offline: statement kept, premise hashes refreshed"

// Rederived is the result of a rederive task that wrote a version.
type Rederived struct {
	Outcome  string  `json:"outcome"` // "rederived"
	ObjectID int64   `json:"object_id"`
	Version  int64   `json:"version"`
	Premises []int64 `json:"changed_premises"`
}

// rederive is the rederive task: the
// inference's content is {"statement": …, "premises": {"<id>": "<content
// hash of premise id when derived>"}, …}. When every premise's current
// content hash is the recorded one the task is a no-op. Otherwise —
// offline rule: the statement (and every other field) is kept and the
// premises' hashes are refreshed to their current ones, with a
// "derivation" field (Derivation) naming the premise versions used — the
// new content is written with knowledge.Service.WriteVersion (author
// "enrichment") based on the inference's latest version, so a write that
// landed meanwhile makes a fork for the Fork Resolution agent rather than
// being overwritten. A premise that no longer exists is recorded as
// MissingPremise. A payload or inference that is missing or malformed
// fails permanently.
func rederive(ctx context.Context, st VersionedStore, id int64) (worker.Result, error) {
	if id <= 0 {
		return worker.Result{}, worker.Permanent(fmt.Errorf("rederive: payload needs object_id, got %d", id))
	}
	o, err := st.GetObject(ctx, id)
	if errors.Is(err, cks.ErrNotFound) {
		return worker.Result{}, worker.Permanent(err)
	}
	if err != nil {
		return worker.Result{}, err
	}
	var content map[string]json.RawMessage
	if err := json.Unmarshal(o.Content, &content); err != nil {
		return worker.Result{}, worker.Permanent(fmt.Errorf("inference %d: content: %w", id, err))
	}
	var premises map[string]string
	if raw, ok := content["premises"]; !ok || json.Unmarshal(raw, &premises) != nil {
		return worker.Result{}, worker.Permanent(fmt.Errorf(`inference %d: content has no "premises" object of "<id>": "<content hash>"`, id))
	}
	keys := make([]string, 0, len(premises))
	for k := range premises {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fresh := make(map[string]string, len(premises))
	d := Derivation{Rule: RederiveRule, PremiseVersions: map[string]int64{}, Replaced: map[string]string{}}
	var changed []int64
	for _, k := range keys {
		pid, err := strconv.ParseInt(k, 10, 64)
		if err != nil || pid <= 0 {
			return worker.Result{}, worker.Permanent(fmt.Errorf("inference %d: premise %q is not an object id", id, k))
		}
		p, err := st.GetObject(ctx, pid)
		switch {
		case errors.Is(err, cks.ErrNotFound):
			// The inference_staleness sweeper's marker of a missing
			// premise: recorded, the inference is no longer stale.
			p.ContentHash = MissingPremise
		case err != nil:
			return worker.Result{}, err
		default:
			d.PremiseVersions[k] = p.HeadVersion
		}
		fresh[k] = p.ContentHash
		if premises[k] != p.ContentHash {
			d.Replaced[k] = premises[k]
			changed = append(changed, pid)
		}
	}
	if len(changed) == 0 {
		return noopResult("inference %d is current: the hashes of its %d premise(s) are the ones it records", id, len(keys)), nil
	}
	base := o.HeadVersion
	if base == 0 {
		heads, err := st.Heads(ctx, id)
		if err != nil {
			return worker.Result{}, err
		}
		if len(heads) == 0 {
			return worker.Result{}, worker.Permanent(fmt.Errorf("inference %d has no versions", id))
		}
		base = heads[len(heads)-1].Version
	}
	d.BasedOn = base
	if content["premises"], err = json.Marshal(fresh); err != nil {
		return worker.Result{}, worker.Permanent(err)
	}
	if content["derivation"], err = json.Marshal(d); err != nil {
		return worker.Result{}, worker.Permanent(err)
	}
	next, err := json.Marshal(content)
	if err != nil {
		return worker.Result{}, worker.Permanent(err)
	}
	v, err := st.WriteVersion(ctx, id, base, next, AuthorEnrichment)
	if err != nil {
		return worker.Result{}, fmt.Errorf("inference %d: writing the re-derived version: %w", id, err)
	}
	return output(Rederived{Outcome: "rederived", ObjectID: id, Version: v.Version, Premises: changed}), nil
}

// Related is one related_to edge an enrich task wrote.
type Related struct {
	ObjectID int64    `json:"object_id"`
	Score    float64  `json:"score"`
	Shared   []string `json:"shared_terms"`
}

// Enriched is the result of an enrich task that linked the object.
type Enriched struct {
	Outcome  string    `json:"outcome"` // "enriched"
	ObjectID int64     `json:"object_id"`
	Related  []Related `json:"related"`
	// Keywords were added to the content (a new version) when it had none.
	Keywords []string `json:"keywords,omitempty"`
	Version  int64    `json:"version,omitempty"`
}

// EnrichMaxKeywords bounds the keywords enrich fills in.
const EnrichMaxKeywords = 10

// enrich is the enrich task (offline rule): the object's terms are those
// of its title and of every string in its content (except under
// "premises" and "derivation", which hold hashes and ids); every other
// object (of any kind except reasoning nodes: critique, rationale,
// model_reply) not already linked to it by an edge in either direction is
// scored by the Jaccard similarity of the two term sets; those sharing at
// least EnrichMinShared terms with a score of at least EnrichMinScore are
// related, and the best EnrichMaxLinks (score, then shared terms, then
// lower id) get an edge object → related, related_to/related_to, weight =
// the score rounded to two decimals. No related object → no-op. Objects
// are read page by page, so a task costs one pass over the store. Missing
// metadata is filled in the content: an object whose content has no
// "keywords" gets a new version with its terms, sorted, at most
// EnrichMaxKeywords (titles are not content and are left alone). Nothing
// to link and keywords present → no-op.
func enrich(ctx context.Context, st VersionedStore, id int64) (worker.Result, error) {
	if id <= 0 {
		return worker.Result{}, worker.Permanent(fmt.Errorf("enrich: payload needs object_id, got %d", id))
	}
	o, err := st.GetObject(ctx, id)
	if errors.Is(err, cks.ErrNotFound) {
		return worker.Result{}, worker.Permanent(err)
	}
	if err != nil {
		return worker.Result{}, err
	}
	mine := objectTerms(o)
	if len(mine) == 0 {
		return noopResult("object %d has no terms to relate it by", id), nil
	}
	linked := map[int64]bool{id: true}
	for _, e := range o.Edges {
		linked[e.Src], linked[e.Dst] = true, true
	}
	var found []Related
	for after := int64(0); ; {
		page, err := st.ListObjects(ctx, cks.ObjectFilter{After: after, Limit: cks.MaxListLimit})
		if err != nil {
			return worker.Result{}, err
		}
		for _, c := range page.Objects {
			// Reasoning nodes are about objects, linked to them already,
			// not knowledge of their own: enrich never links them.
			if linked[c.ID] || slices.Contains(cks.ReasoningKinds[:], c.Kind) {
				continue
			}
			theirs := objectTerms(c)
			shared := sharedTerms(mine, theirs)
			union := len(mine) + len(theirs) - len(shared)
			if len(shared) < EnrichMinShared || union == 0 {
				continue
			}
			score := float64(len(shared)) / float64(union)
			if score < EnrichMinScore {
				continue
			}
			found = append(found, Related{ObjectID: c.ID, Score: math.Round(score*100) / 100, Shared: shared})
		}
		if page.Next == 0 {
			break
		}
		after = page.Next
	}
	out := Enriched{Outcome: "enriched", ObjectID: id}
	var content map[string]json.RawMessage
	if json.Unmarshal(o.Content, &content) == nil && content["keywords"] == nil {
		for t := range mine {
			out.Keywords = append(out.Keywords, t)
		}
		slices.Sort(out.Keywords)
		out.Keywords = out.Keywords[:min(len(out.Keywords), EnrichMaxKeywords)]
	}
	if len(found) == 0 && len(out.Keywords) == 0 {
		return noopResult("no unlinked object shares at least %d terms and a similarity of %.2f with object %d, and it has keywords", EnrichMinShared, EnrichMinScore, id), nil
	}
	if len(found) > 0 {
		slices.SortFunc(found, func(a, b Related) int {
			return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(len(b.Shared), len(a.Shared)), cmp.Compare(a.ObjectID, b.ObjectID))
		})
		found = found[:min(len(found), EnrichMaxLinks)]
		edges := make([]knowledge.NewEdge, len(found))
		for i, r := range found {
			w := r.Score
			edges[i] = knowledge.NewEdge{Src: id, Dst: r.ObjectID, BaseType: BaseRelatedTo, SemanticType: SemRelatedTo, Weight: &w}
		}
		if _, err := st.AddEdges(ctx, edges); err != nil {
			return worker.Result{}, fmt.Errorf("object %d: writing related_to edges: %w", id, err)
		}
		out.Related = found
	}
	if len(out.Keywords) > 0 {
		content["keywords"], _ = json.Marshal(out.Keywords)
		body, err := json.Marshal(content)
		if err != nil {
			return worker.Result{}, err
		}
		v, err := st.WriteVersion(ctx, id, o.HeadVersion, body, "enrichment")
		if err != nil {
			return worker.Result{}, fmt.Errorf("object %d: writing keywords: %w", id, err)
		}
		out.Version = v.Version
	}
	return output(out), nil
}

// objectTerms is the term set enrich compares.
func objectTerms(o cks.Object) map[string]bool {
	return termSet(append([]string{o.Title}, stringLeaves(o.Content, "premises", "derivation")...)...)
}
