package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// creator records the objects Submit creates.
type creator struct{ made []knowledge.NewObject }

func (c *creator) CreateObject(_ context.Context, n knowledge.NewObject) (cks.Object, error) {
	c.made = append(c.made, n)
	return cks.Object{ID: int64(len(c.made)), Kind: n.Kind, Title: n.Title, Content: n.Content, Status: n.Status}, nil
}

// TestNewQuestion: the question and corpus rules of submit_research, and
// the object a question enters the pipeline as.
func TestNewQuestion(t *testing.T) {
	for _, tc := range []struct {
		name  string
		q     pipeline.Question
		field string // "" when accepted
	}{
		{"plain", pipeline.Question{Question: "why?"}, ""},
		{"exactly the bound", pipeline.Question{Question: strings.Repeat("x", pipeline.MaxQuestionLen)}, ""},
		{"absolute corpus", pipeline.Question{Question: "why?", Corpus: "/srv/docs"}, ""},
		{"blank", pipeline.Question{Question: " \t\n"}, "question"},
		{"over the bound", pipeline.Question{Question: strings.Repeat("x", pipeline.MaxQuestionLen+1)}, "question"},
		{"not text", pipeline.Question{Question: "a\x00b"}, "question"},
		{"relative corpus", pipeline.Question{Question: "why?", Corpus: "docs"}, "corpus"},
		{"long corpus", pipeline.Question{Question: "why?", Corpus: "/" + strings.Repeat("d", 4096)}, "corpus"},
	} {
		var c creator
		_, err := pipeline.Submit(context.Background(), &c, tc.q, "tester")
		if tc.field != "" {
			if !cks.IsFieldError(err, tc.field) || len(c.made) != 0 {
				t.Errorf("%s: %v (%d created), want a FieldError naming %s and nothing created", tc.name, err, len(c.made), tc.field)
			}
			continue
		}
		if err != nil || len(c.made) != 1 {
			t.Fatalf("%s: %v, %d created", tc.name, err, len(c.made))
		}
		n := c.made[0]
		var content pipeline.Question
		if n.Kind != cks.KindQuestion || n.Status != cks.StatusAwaitingResearch || n.CreatedBy != "tester" ||
			json.Unmarshal(n.Content, &content) != nil || content != tc.q {
			t.Errorf("%s: object %+v (content %s)", tc.name, n, n.Content)
		}
	}
	// The content holds the question trimmed; a long title is cut at a rune
	// boundary.
	long := "  " + strings.Repeat("é", 150) + "  "
	n, err := pipeline.NewQuestion(pipeline.Question{Question: long}, "tester")
	if err != nil {
		t.Fatal(err)
	}
	var content pipeline.Question
	if json.Unmarshal(n.Content, &content) != nil || content.Question != strings.TrimSpace(long) {
		t.Errorf("content %s, want the question trimmed", n.Content)
	}
	if len(n.Title) > 200 || !utf8.ValidString(n.Title) || !strings.HasSuffix(n.Title, "...") {
		t.Errorf("title %q (%d bytes): want at most 200 valid bytes ending in ...", n.Title, len(n.Title))
	}
}
