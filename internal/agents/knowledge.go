package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/llm"
)

// Authors and log agents of what the knowledge agents write.
const (
	AuthorForkResolution = "fork_resolution"
	AgentCritic          = "critic"
	AuthorEnrichment     = "enrichment"
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
