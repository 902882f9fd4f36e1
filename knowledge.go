package cks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Object is one row of cks_objects: a node of the knowledge graph (a
// question moving through the research pipeline, a claim, a synthesis, or a
// reasoning node: a critique, a rationale, a rejected model reply).
type Object struct {
	ID    int64  `json:"object_id"`
	Kind  string `json:"kind"`
	Title string `json:"title,omitempty"`
	// Content is a JSON object; ContentHash is the SHA-256 of its
	// canonical encoding (CanonicalJSON), hex.
	Content     json.RawMessage `json:"content"`
	ContentHash string          `json:"content_hash"`
	// Status is the object's current_status in a pipeline ("" for objects
	// no pipeline moves, such as reasoning nodes). It changes only together
	// with an appended TransitionEntry.
	Status string `json:"current_status,omitempty"`
	// ClaimedBy and ClaimToken identify the step worker that claimed the
	// object (ClaimObjects); empty when unclaimed.
	ClaimedBy  string    `json:"claimed_by,omitempty"`
	ClaimToken string    `json:"claim_token,omitempty"`
	ClaimedAt  time.Time `json:"claimed_at,omitzero"`
	// Round counts the times the object was sent back to an earlier stage.
	Round int `json:"round"`
	// HeadVersion is the number of the latest written version (whose
	// content this is; versions are numbered per object, see Version);
	// Forked says the object has other heads too (Versions).
	HeadVersion int64     `json:"head_version"`
	Forked      bool      `json:"forked,omitempty"`
	CreatedBy   string    `json:"created_by,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Log is the object's transition log, oldest first; Edges every edge
	// from or to it, oldest first. Both filled by GetObject only.
	Log   []TransitionEntry `json:"log,omitempty"`
	Edges []Edge            `json:"edges,omitempty"`
}

// TransitionEntry is one append-only row of cks_transition_log.
type TransitionEntry struct {
	Seq      int64     `json:"seq"`
	ObjectID int64     `json:"object_id"`
	TS       time.Time `json:"ts"`
	// Agent is the step (or actor) that wrote the entry; Action what it
	// did ("created", "completed", "rejected", "failed", "parked", …).
	Agent  string `json:"agent"`
	Action string `json:"action"`
	// TransitionedTo is the status after the entry (equal to the one
	// before when the entry records a failure that changed nothing).
	TransitionedTo string `json:"transitioned_to"`
	// ReasoningNodeID names the object holding the reasoning, if any: the
	// log itself stays short (ADR-007 §4).
	ReasoningNodeID *int64 `json:"reasoning_node_id,omitempty"`
	// ContentHash and Round are the object's after the entry: a step's
	// completion is recognised by (agent, content hash, round).
	ContentHash string `json:"content_hash"`
	Round       int    `json:"round"`
}

// Edge is one row of cks_edges. BaseType is the structural type graph
// algorithms use (e.g. depends_on); SemanticType what the edge means
// (critiques, supports, refutes, resolves, cites, …).
type Edge struct {
	ID           int64    `json:"edge_id"`
	Src          int64    `json:"src"`
	Dst          int64    `json:"dst"`
	BaseType     string   `json:"base_type"`
	SemanticType string   `json:"semantic_type,omitempty"`
	Weight       *float64 `json:"weight,omitempty"`
	// CreatedAt is when the edge was written.
	CreatedAt time.Time `json:"created_at"`
}

// ObjectFilter selects a page of ListObjects.
type ObjectFilter struct {
	// Kinds and Statuses restrict the result when non-empty (any of them).
	Kinds    []string
	Statuses []string
	// After is the cursor: only objects with object_id > After.
	After int64
	// Unclaimed keeps only objects no worker has claimed (a cheap read a
	// step makes before it tries to claim).
	Unclaimed bool
	// Text, when set, keeps only objects whose title or content contains
	// it, ASCII letters matched in either case (at most MaxSearchText
	// bytes).
	Text string
	// Limit is the page size, 1..MaxListLimit; 0 means DefaultListLimit.
	Limit int
}

// MaxSearchText bounds ObjectFilter.Text.
const MaxSearchText = 200

// SearchKey is the case-folded form of a text that searches (the filters'
// q, list_tasks' and list_objects') match: a search matches a stored text
// when SearchKey(search) is a substring of SearchKey(stored), on both
// dialects alike. The rule, per character: its Unicode lowercase (the
// unconditional full mapping, as ICU's root locale lowers: Ä→ä, Σ→σ,
// K (Kelvin)→k, and İ→i̇, i and a combining dot), then the final sigma ς
// as σ — so ΣΊΣΥΦΟΣ, Σίσυφος and σίσυφος fold alike. Nothing else: no
// accent is removed, ß stays ß (not ss), ſ stays ſ. SQLite calls it as
// cks_fold (internal/driver/sqlite/functions.go); Postgres computes the same with
// translate(lower(text COLLATE "und-x-icu"), chr(962), chr(963)), which a test holds
// to it for every character (TestFoldIsSearchKey).
func SearchKey(s string) string {
	ascii, upper := true, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		upper = upper || 'A' <= c && c <= 'Z'
	}
	if ascii && !upper {
		return s // most stored text: nothing to fold, nothing to copy
	}
	if ascii {
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + ('a' - 'A')
			}
		}
		return string(b)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch r {
		case '\u0130': // İ: its full lowercase is two characters
			b.WriteString("i\u0307")
			continue
		case '\u03c2': // ς
			r = '\u03c3'
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// Validate reports the first bad field of f and fills the default limit.
func (f ObjectFilter) Validate() (ObjectFilter, error) {
	if err := ValidateTexts("kind", f.Kinds); err != nil {
		return f, err
	}
	if err := ValidateTexts("status", f.Statuses); err != nil {
		return f, err
	}
	if err := ValidateText("q", f.Text); err != nil {
		return f, err
	}
	switch {
	case len(f.Text) > MaxSearchText:
		return f, fieldError("q", fmt.Sprintf("a search text of at most %d bytes", MaxSearchText))
	case f.Limit < 0 || f.Limit > MaxListLimit:
		return f, fieldError("limit", fmt.Sprintf("an integer from 1 to %d (0 for the default %d)", MaxListLimit, DefaultListLimit))
	case f.After < 0:
		return f, fieldError("cursor", "an object id")
	}
	if f.Limit == 0 {
		f.Limit = DefaultListLimit
	}
	return f, nil
}

// ObjectPage is one page of ListObjects, ordered by object_id.
type ObjectPage struct {
	Objects []Object `json:"objects"`
	// Next is the cursor of the following page, 0 on the last.
	Next int64 `json:"next_cursor,omitempty"`
}

// Version is one row of cks_object_versions: one content write of an
// object. The versions of an object form a DAG through Parents: a write
// names the version it was based on, a merge all the heads it merged.
//
// Versions are numbered per object: 1 for the first, then 1, 2, 3 … in
// the order they were written, so two objects both have a version 1 and a
// version is named by its object and its number. Every number a version
// write takes or returns (a base, heads, parents, an object's head
// version) is such a number of that object.
type Version struct {
	Version  int64 `json:"version"`
	ObjectID int64 `json:"object_id"`
	// Parents are the versions this one was written from: none for the
	// first version, one for a write, two or more for a merge (sorted).
	Parents     []int64         `json:"parents"`
	Content     json.RawMessage `json:"content"`
	ContentHash string          `json:"content_hash"`
	Author      string          `json:"author"`
	CreatedAt   time.Time       `json:"created_at"`
}

// Fork is an object with more than one head version.
type Fork struct {
	ObjectID int64 `json:"object_id"`
	// Heads are the numbers of the head versions, ascending.
	Heads []int64 `json:"heads"`
}

// CanonicalJSON returns the canonical encoding of a JSON value: object keys
// sorted, no insignificant white space, numbers and strings as written
// (numbers are kept as their literal text). Two encodings of the same
// value, whatever their key order and spacing, have the same canonical form.
func CanonicalJSON(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	// More is false before a stray ] or }, so look for the end itself.
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value")
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return bytes.TrimRight(out.Bytes(), "\n"), nil
}
