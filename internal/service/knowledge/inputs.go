package knowledge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/cks-dev/cks"
)

// Limits on knowledge input, enforced by the Validate methods.
const (
	// MaxKindLen bounds kinds, statuses, actions and edge types.
	MaxKindLen = 64
)

// NewObject is the input of CreateObject, and of an object created by a
// transition (Attachment).
type NewObject struct {
	Kind  string `json:"kind"`
	Title string `json:"title,omitempty"`
	// Content must be a JSON object; empty means {}.
	Content json.RawMessage `json:"content,omitempty"`
	// Status, when set, puts the object into a pipeline; its creation is
	// then the first log entry (action "created").
	Status    string `json:"status,omitempty"`
	CreatedBy string `json:"created_by,omitempty"`
}

// Validate reports the first bad field of n (naming it as prefix+field)
// and returns n with its content in canonical form.
func (n NewObject) Validate(prefix string) (NewObject, error) {
	for _, f := range []struct{ name, v string }{{"title", n.Title}, {"created_by", n.CreatedBy}} {
		if err := cks.ValidateText(prefix+f.name, f.v); err != nil {
			return n, err
		}
	}
	if err := validName(prefix+"kind", n.Kind, true); err != nil {
		return n, err
	}
	if err := validName(prefix+"status", n.Status, false); err != nil {
		return n, err
	}
	if len(n.Title) > 1000 {
		return n, fieldError(prefix+"title", "at most 1000 bytes")
	}
	c, _, err := CanonicalContent(n.Content, prefix+"content")
	if err != nil {
		return n, err
	}
	n.Content = c
	return n, nil
}

// NewEdge is an edge to write between existing objects.
type NewEdge struct {
	Src          int64    `json:"src"`
	Dst          int64    `json:"dst"`
	BaseType     string   `json:"base_type"`
	SemanticType string   `json:"semantic_type,omitempty"`
	Weight       *float64 `json:"weight,omitempty"`
}

// validate reports the first bad field of e, named prefix+field.
func (e NewEdge) validate(prefix string) error {
	switch {
	case e.Src <= 0:
		return fieldError(prefix+"src", "the id of an existing object")
	case e.Dst <= 0:
		return fieldError(prefix+"dst", "the id of an existing object")
	}
	return validEdgeTypes(prefix, e.BaseType, e.SemanticType, e.Weight)
}

func validEdgeTypes(prefix, base, semantic string, weight *float64) error {
	if err := validName(prefix+"base_type", base, true); err != nil {
		return err
	}
	if err := validName(prefix+"semantic_type", semantic, false); err != nil {
		return err
	}
	if weight != nil && (math.IsNaN(*weight) || *weight < -1 || *weight > 1) {
		return fieldError(prefix+"weight", "a number from -1 to 1")
	}
	return nil
}

// validName checks a kind, status, action or edge type: lower-case
// letters, digits and underscores, at most MaxKindLen bytes.
func validName(field, v string, required bool) error {
	if err := cks.ValidateText(field, v); err != nil {
		return err
	}
	if v == "" {
		if required {
			return fieldError(field, "a non-empty name of lower-case letters, digits and _")
		}
		return nil
	}
	if len(v) > MaxKindLen || strings.TrimLeft(v, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return fieldError(field, fmt.Sprintf("a name of lower-case letters, digits and _ (at most %d bytes), got %q", MaxKindLen, v))
	}
	return nil
}

// Attachment is an object a transition creates together with an edge from
// it to the transitioned object (Src = the new object, Dst = the subject):
// a reasoning node (critique, rationale, rejected reply), a claim a
// researcher found, a synthesis. Links are further edges from the new
// object to existing objects (a synthesis supported by claims).
type Attachment struct {
	Object       NewObject  `json:"object"`
	BaseType     string     `json:"base_type"`
	SemanticType string     `json:"semantic_type,omitempty"`
	Weight       *float64   `json:"weight,omitempty"`
	Links        []LinkFrom `json:"links,omitempty"`
}

// LinkFrom is an edge from an attachment to the existing object Dst.
type LinkFrom struct {
	Dst          int64    `json:"dst"`
	BaseType     string   `json:"base_type"`
	SemanticType string   `json:"semantic_type,omitempty"`
	Weight       *float64 `json:"weight,omitempty"`
}

// ObjectTransition is the input of TransitionObject: everything one pipeline step
// writes about the object it claimed, applied in one transaction.
type ObjectTransition struct {
	// From is the status the object must still have; To the status after.
	// To == From records an outcome that does not move the object (a
	// failure), still with a log entry.
	From string `json:"from"`
	To   string `json:"to"`
	// Action is the log entry's action.
	Action string `json:"action"`
	// Agent is the log entry's agent (the step's name).
	Agent string `json:"agent"`
	// Content, when set, replaces the object's content (a JSON object).
	Content json.RawMessage `json:"content,omitempty"`
	// NextRound increments the object's round (a step sending it back).
	NextRound bool `json:"next_round,omitempty"`
	// Attach creates objects linked to this one.
	Attach []Attachment `json:"attach,omitempty"`
	// Reasoning is the index in Attach of the node the log entry points
	// to, or -1 for none.
	Reasoning int `json:"reasoning"`
	// Edges are further edges between existing objects.
	Edges []NewEdge `json:"edges,omitempty"`
	// SetStatus changes the status of other objects (e.g. a claim marked
	// disputed), each with its own log entry by Agent pointing to the same
	// reasoning node. Naming the transitioned object itself is a
	// FieldError (its status is To).
	SetStatus []StatusChange `json:"set_status,omitempty"`
}

// StatusChange sets the status of another object, with a log entry.
type StatusChange struct {
	ObjectID int64  `json:"object_id"`
	Status   string `json:"status"`
	Action   string `json:"action"`
}

// Validate reports the first bad field of t and returns t with its
// contents in canonical form.
func (t ObjectTransition) Validate() (ObjectTransition, error) {
	for _, f := range []struct {
		name, v string
	}{{"from", t.From}, {"to", t.To}, {"action", t.Action}} {
		if err := validName(f.name, f.v, true); err != nil {
			return t, err
		}
	}
	if err := cks.ValidateText("agent", t.Agent); err != nil {
		return t, err
	}
	if strings.TrimSpace(t.Agent) == "" {
		return t, fieldError("agent", "the name of the step writing the transition")
	}
	if len(t.Content) > 0 {
		c, _, err := CanonicalContent(t.Content, "content")
		if err != nil {
			return t, err
		}
		t.Content = c
	}
	if t.Reasoning < -1 || t.Reasoning >= len(t.Attach) {
		return t, fieldError("reasoning", fmt.Sprintf("-1 or an index into attach (0..%d)", len(t.Attach)-1))
	}
	attach := make([]Attachment, len(t.Attach))
	for i, a := range t.Attach {
		p := fmt.Sprintf("attach[%d].", i)
		o, err := a.Object.Validate(p + "object.")
		if err != nil {
			return t, err
		}
		a.Object = o
		if err := validEdgeTypes(p, a.BaseType, a.SemanticType, a.Weight); err != nil {
			return t, err
		}
		for j, l := range a.Links {
			lp := fmt.Sprintf("%slinks[%d].", p, j)
			if l.Dst <= 0 {
				return t, fieldError(lp+"dst", "the id of an existing object")
			}
			if err := validEdgeTypes(lp, l.BaseType, l.SemanticType, l.Weight); err != nil {
				return t, err
			}
		}
		attach[i] = a
	}
	t.Attach = attach
	for i, e := range t.Edges {
		if err := e.validate(fmt.Sprintf("edges[%d].", i)); err != nil {
			return t, err
		}
	}
	for i, c := range t.SetStatus {
		p := fmt.Sprintf("set_status[%d].", i)
		if c.ObjectID <= 0 {
			return t, fieldError(p+"object_id", "the id of an existing object")
		}
		if err := validName(p+"status", c.Status, true); err != nil {
			return t, err
		}
		if err := validName(p+"action", c.Action, true); err != nil {
			return t, err
		}
	}
	return t, nil
}

// CanonicalContent checks that content is a JSON object (empty means {}) of
// at most MaxObjectContent bytes and returns its canonical encoding and
// content hash; errors are FieldErrors naming field.
func CanonicalContent(content json.RawMessage, field string) (json.RawMessage, string, error) {
	if len(bytes.TrimSpace(content)) == 0 {
		content = json.RawMessage(`{}`)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(content), []byte("{")) {
		return nil, "", fieldError(field, "a JSON object")
	}
	c, err := cks.CanonicalJSON(content)
	if err != nil {
		return nil, "", fieldError(field, fmt.Sprintf("a JSON object (%v)", err))
	}
	// Checked on the content as written: canonicalising would turn invalid
	// UTF-8 and unpaired surrogates into U+FFFD.
	if err := cks.ValidateJSON(field, content); err != nil {
		return nil, "", err
	}
	if len(c) > cks.MaxJSONBytes {
		return nil, "", fieldError(field, fmt.Sprintf("at most %d bytes of JSON, got %d", cks.MaxJSONBytes, len(c)))
	}
	sum := sha256.Sum256(c)
	return c, hex.EncodeToString(sum[:]), nil
}

func fieldError(field, expected string) error {
	return &cks.FieldError{Field: field, Expected: expected}
}
