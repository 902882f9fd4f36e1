package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/knowledge"
	"github.com/cks-dev/cks/llm"
	"github.com/cks-dev/cks/worker"
)

// The task types of the knowledge agents (issue 8), enqueued by the
// knowledge sweepers, and their payloads.
const (
	// TypeResolveFork: {"object_id": N, "heads": [V1, V2, …]} — the
	// fork_detection sweeper found object N with those heads.
	TypeResolveFork = "resolve_fork"
	// TypeCritique: {"claims": [A, B]} — the contradiction sweeper found
	// claims A and B contradicting each other.
	TypeCritique = "critique"
	// TypeRederive: {"object_id": N} — a premise of inference N changed
	// (inference_staleness sweeper).
	TypeRederive = "rederive"
	// TypeEnrich: {"object_id": N} — object N is to be linked to related
	// ones (graph_health sweeper, for orphans).
	TypeEnrich = "enrich"
)

// Authors and log agents of what the knowledge agents write.
const (
	AuthorForkResolution = "fork_resolution"
	AgentCritic          = "critic"
	AuthorEnrichment     = "enrichment"
)

// DefaultTypes returns the task types agent kind claims unless
// CKS_<AGENT>_TYPES or --types say otherwise: critic → critique, enrichment
// → rederive and enrich, fork_resolution → resolve_fork; none for the other
// kinds (pipeline works objects, not tasks; exec needs --types).
func DefaultTypes(kind string) []string {
	switch kind {
	case "critic":
		return []string{TypeCritique}
	case "enrichment":
		return []string{TypeRederive, TypeEnrich}
	case "fork_resolution":
		return []string{TypeResolveFork}
	}
	return nil
}

// Edge types and object kinds the knowledge agents write (the pipeline's
// vocabulary, ADR-007 §4).
const (
	baseDependsOn = "depends_on"
	semResolves   = "resolves"
	semSupports   = "supports"
	semRefutes    = "refutes"
	kindRationale = "rationale"
	kindCritique  = "critique"
	// StatusDisputed is the status the Critic gives the losing claim.
	StatusDisputed = "disputed"
)

// VersionedStore is what the Fork Resolution and Enrichment resolvers need:
// the knowledge store with its version history.
type VersionedStore interface {
	GetObject(ctx context.Context, id int64) (cks.Object, error)
	ListObjects(ctx context.Context, f cks.ObjectFilter) (cks.ObjectPage, error)
	AddEdges(ctx context.Context, es []knowledge.NewEdge) ([]cks.Edge, error)
	Heads(ctx context.Context, id int64) ([]cks.Version, error)
	ObjectVersions(ctx context.Context, id int64) ([]cks.Version, error)
	WriteVersion(ctx context.Context, id, base int64, content json.RawMessage, author string) (cks.Version, error)
	MergeVersions(ctx context.Context, id int64, heads []int64, content json.RawMessage, author string, reason *knowledge.Attachment) (cks.Version, *cks.Object, error)
}

// decodePayload decodes a task's payload into v; a payload that does not
// fit is a permanent failure (retrying cannot fix it).
func decodePayload(t cks.Task, v any) error {
	dec := json.NewDecoder(bytes.NewReader(t.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return worker.Permanent(fmt.Errorf("%s task %d: bad payload %s: %v", t.Type, t.ID, clipString(string(t.Payload), 200), err))
	}
	return nil
}

// output is the JSON result of a knowledge task: Outcome is "noop" when
// there was nothing to do (Reason says why), else what was done.
func output(v any) worker.Result {
	b, _ := json.Marshal(v)
	return worker.Result{Output: string(b)}
}

// noop is the result of a task that found nothing to do.
type noop struct {
	Outcome string `json:"outcome"` // "noop"
	Reason  string `json:"reason"`
}

func noopResult(format string, args ...any) worker.Result {
	return output(noop{Outcome: "noop", Reason: fmt.Sprintf(format, args...)})
}

func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utfStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utfStart(b byte) bool { return b&0xC0 != 0x80 }

// termSet returns the distinct terms of the texts (llm.Terms: the offline
// model's terms, so the agents and the model match text alike).
func termSet(texts ...string) map[string]bool {
	m := map[string]bool{}
	for _, s := range texts {
		for _, t := range llm.Terms(s) {
			m[t] = true
		}
	}
	return m
}

// sharedTerms returns the sorted terms in both a and b.
func sharedTerms(a, b map[string]bool) []string {
	var out []string
	for t := range a {
		if b[t] {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// stringLeaves returns every string value in the JSON content (object
// values and array elements, recursively, in key order), skipping the
// values under the keys in skip at any depth.
func stringLeaves(content json.RawMessage, skip ...string) []string {
	var v any
	if json.Unmarshal(content, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				if !slices.Contains(skip, k) {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(v[k])
			}
		}
	}
	walk(v)
	return out
}
