package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/cks-dev/cks/store"
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

// versions returns st's version history, or a permanent error when the
// backend does not record versions.
func versions(st store.Knowledge) (store.Versions, error) {
	v, ok := st.(store.Versions)
	if !ok {
		return nil, worker.Permanent(fmt.Errorf("the store (%T) does not record object versions", st))
	}
	return v, nil
}

// decodePayload decodes a task's payload into v; a payload that does not
// fit is a permanent failure (retrying cannot fix it).
func decodePayload(t store.Task, v any) error {
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

// stopWords are dropped by terms (function words; the same idea as the
// offline model's index terms in package llm).
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		a about above after again against all also am an and any are as at
		be because been before being below between both but by can cannot
		could did do does doing done down during each either else etc every
		few for from further get gets got had has have having he her here
		hers him his how i if in into is it its itself just let lets may me
		might more most must my neither no nor not of off often on once only
		or other our ours out over own per same shall she should so some
		such than that the their theirs them then there these they this
		those through thus to too under until up upon us very via was we
		were what whatever when whenever where whether which while who whom
		whose why will with within without would yet you your yours`) {
		m[w] = true
	}
	return m
}()

// termSet returns the distinct terms of the texts: lower-cased runs of
// letters and digits, without stop words and single letters, with a
// trivial plural strip ("sses" → "ss", "ies" → "y", a final "s" dropped
// unless the word ends in "ss", "us" or "is" or has at most three letters)
// — the rules of the offline model's terms (package llm), restated here
// because llm does not export them.
func termSet(texts ...string) map[string]bool {
	m := map[string]bool{}
	for _, s := range texts {
		for _, f := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}) {
			if stopWords[f] {
				continue
			}
			if r := []rune(f); len(r) == 1 && !unicode.IsDigit(r[0]) {
				continue
			}
			m[stem(f)] = true
		}
	}
	return m
}

func stem(w string) string {
	switch {
	case len(w) <= 3:
		return w
	case strings.HasSuffix(w, "sses"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "s"):
		return w[:len(w)-1]
	}
	return w
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
