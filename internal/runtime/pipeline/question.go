package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// MaxQuestionLen bounds a research question (bytes).
const MaxQuestionLen = 2000

// maxCorpusPathLen bounds the corpus directory a question may name.
const maxCorpusPathLen = 4096

// maxTitleLen bounds the title of a question object (bytes); a longer
// question is cut there, at a rune boundary, and ends in "...".
const maxTitleLen = 200

// NewQuestion validates q and returns the question object that puts it
// into the pipeline, created by createdBy: kind question, status
// awaiting_research, content {"question", "corpus"?} with the question
// trimmed. A question that is empty or longer than MaxQuestionLen, or a
// corpus that is no absolute directory path, is a FieldError naming
// question or corpus.
func NewQuestion(q Question, createdBy string) (knowledge.NewObject, error) {
	if err := cmp.Or(cks.ValidateText("question", q.Question), cks.ValidateText("corpus", q.Corpus)); err != nil {
		return knowledge.NewObject{}, err
	}
	text := strings.TrimSpace(q.Question)
	switch {
	case text == "":
		return knowledge.NewObject{}, &cks.FieldError{Field: "question", Expected: "a non-empty question"}
	case len(q.Question) > MaxQuestionLen:
		return knowledge.NewObject{}, &cks.FieldError{Field: "question",
			Expected: fmt.Sprintf("at most %d bytes, got %d", MaxQuestionLen, len(q.Question))}
	}
	if q.Corpus != "" {
		switch {
		case len(q.Corpus) > maxCorpusPathLen:
			return knowledge.NewObject{}, &cks.FieldError{Field: "corpus", Expected: fmt.Sprintf("a directory path of at most %d bytes", maxCorpusPathLen)}
		case !filepath.IsAbs(q.Corpus) || strings.ContainsRune(q.Corpus, 0):
			// A relative path would be resolved by whichever process runs
			// the pipeline, which is not the caller's working directory.
			return knowledge.NewObject{}, &cks.FieldError{Field: "corpus",
				Expected: fmt.Sprintf("an absolute directory path on the pipeline's host, got %q", q.Corpus)}
		}
	}
	content, err := json.Marshal(Question{Question: text, Corpus: q.Corpus})
	if err != nil {
		return knowledge.NewObject{}, err
	}
	title := text
	if len(title) > maxTitleLen {
		title = strings.ToValidUTF8(title[:maxTitleLen-3], "") + "..."
	}
	return knowledge.NewObject{Kind: cks.KindQuestion, Title: title, Content: content,
		Status: cks.StatusAwaitingResearch, CreatedBy: createdBy}, nil
}

// ObjectCreator creates objects (knowledge.Service).
type ObjectCreator interface {
	CreateObject(ctx context.Context, n knowledge.NewObject) (cks.Object, error)
}

// Submit puts question q, asked by createdBy, into the pipeline: it
// creates its question object (NewQuestion) in st, where the Researcher
// claims it. Nothing is created when q is refused.
func Submit(ctx context.Context, st ObjectCreator, q Question, createdBy string) (cks.Object, error) {
	n, err := NewQuestion(q, createdBy)
	if err != nil {
		return cks.Object{}, err
	}
	return st.CreateObject(ctx, n)
}
