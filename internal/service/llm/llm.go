// Package llm holds the models the research pipeline (ADR-007) asks: the
// Model interface, the offline provider (the default: no network, a local
// corpus ranked with BM25 and plain, documented heuristics) and an
// OpenAI-compatible chat-completions provider for hosted APIs and local model
// servers. Retrieval is not the model's job: the Researcher step searches the
// Corpus and hands the model passages to cite.
package llm

import (
	"context"
	"errors"
	"fmt"
)

// Passage is a piece of the corpus that claims cite.
type Passage struct {
	// ID is stable across loads of the same corpus: "PATH#N", the N-th
	// passage of the file at PATH (relative to the corpus directory).
	ID      string  `json:"id"`
	Source  string  `json:"source"`
	Heading string  `json:"heading,omitempty"`
	Text    string  `json:"text"`
	Score   float64 `json:"score,omitempty"`
}

// Claim is one statement drawn from passages, with the ids of the passages
// that support it.
type Claim struct {
	Text      string   `json:"text"`
	Citations []string `json:"citations"`
}

// ResearchInput asks for claims that answer Question from Passages.
type ResearchInput struct {
	Question string    `json:"question"`
	Passages []Passage `json:"passages"`
	// Feedback holds the critiques and rationales of earlier rounds, so a
	// new round can look elsewhere.
	Feedback []string `json:"feedback,omitempty"`
	// Round is 0 for the first research of the question.
	Round int `json:"round"`
}

// ResearchOutput is the claims found; every citation must be the ID of one
// of the input passages.
type ResearchOutput struct {
	Claims []Claim `json:"claims"`
}

// CritiqueInput asks for a verdict on each claim.
type CritiqueInput struct {
	Question string    `json:"question"`
	Claims   []Claim   `json:"claims"`
	Passages []Passage `json:"passages"`
}

// Verdict judges Claims[Claim].
type Verdict struct {
	Claim  int    `json:"claim"`
	Accept bool   `json:"accept"`
	Reason string `json:"reason"`
}

// CritiqueOutput is one verdict per claim and whether the accepted claims
// are enough to answer the question.
type CritiqueOutput struct {
	Verdicts   []Verdict `json:"verdicts"`
	Sufficient bool      `json:"sufficient"`
	Summary    string    `json:"summary"`
}

// SynthesisInput asks for an answer built from the accepted claims only.
type SynthesisInput struct {
	Question string  `json:"question"`
	Claims   []Claim `json:"claims"`
}

// SynthesisOutput is the answer and the passage ids it cites.
type SynthesisOutput struct {
	Answer    string   `json:"answer"`
	Citations []string `json:"citations"`
}

// ValidationInput asks whether Answer is an acceptable resolution of
// Question given the claims it rests on (ADR-007's validate_knowledge).
type ValidationInput struct {
	Question  string   `json:"question"`
	Answer    string   `json:"answer"`
	Citations []string `json:"citations"`
	Claims    []Claim  `json:"claims"`
}

// Where a rejected answer goes back to.
const (
	// BackToResearch: the claims do not cover the question.
	BackToResearch = "research"
	// BackToSynthesis: the claims are fine, the answer built from them is not.
	BackToSynthesis = "synthesis"
)

// ValidationOutput is the Arbiter's verdict: Valid, or not with a
// rationale and the stage the question goes back to (BackToResearch or
// BackToSynthesis).
type ValidationOutput struct {
	Valid      bool   `json:"valid"`
	Rationale  string `json:"rationale"`
	SendBackTo string `json:"send_back_to,omitempty"`
}

// Model is what the pipeline steps ask. Implementations must honour ctx and
// return a *ReplyError when the model answered something unusable.
type Model interface {
	// Name identifies the provider and model, e.g. "offline" or
	// "openai:gpt-4o-mini"; it is recorded with what the model wrote.
	Name() string
	Research(ctx context.Context, in ResearchInput) (ResearchOutput, error)
	Critique(ctx context.Context, in CritiqueInput) (CritiqueOutput, error)
	Synthesize(ctx context.Context, in SynthesisInput) (SynthesisOutput, error)
	Validate(ctx context.Context, in ValidationInput) (ValidationOutput, error)
}

// ReplyError is a model reply that is not valid JSON of the expected shape
// (or misses fields, or cites what it was not given). Raw is the reply as
// received, kept by the pipeline as a reasoning node.
type ReplyError struct {
	Raw string
	Err error
}

func (e *ReplyError) Error() string { return fmt.Sprintf("unusable model reply: %v", e.Err) }

// Unwrap returns the reason the reply was refused.
func (e *ReplyError) Unwrap() error { return e.Err }

// ErrUnavailable means the model endpoint could not be reached or kept
// failing (after retries); the pipeline retries later and loses nothing.
var ErrUnavailable = errors.New("model unavailable")
