package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/llm"
)

// accented is the offline model with every claim and answer led by a long
// run of two-byte characters, so any title cut from them at a byte count
// would split a UTF-8 sequence.
type accented struct{ llm.Model }

const accents = "été, café, naïve — xééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé: "

func (a accented) Research(ctx context.Context, in llm.ResearchInput) (llm.ResearchOutput, error) {
	out, err := a.Model.Research(ctx, in)
	for i := range out.Claims {
		out.Claims[i].Text = accents + out.Claims[i].Text
	}
	return out, err
}

func (a accented) Synthesize(ctx context.Context, in llm.SynthesisInput) (llm.SynthesisOutput, error) {
	out, err := a.Model.Synthesize(ctx, in)
	out.Answer = accents + out.Answer
	return out, err
}

// TestTitlesAreCutAtCharacters: the titles the pipeline derives from long
// claim, reasoning and answer texts are cut at a character boundary, so
// the store takes them (as text in UTF-8) and the question resolves, on
// both backends.
func TestTitlesAreCutAtCharacters(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k := open(t)
		start(t, pipeline.Config{Store: k.Objects, Changes: k.Changes, Model: accented{llm.NewOffline()}, Corpus: corpus(t), Workers: 1})
		q := submit(t, k.Objects, questions[0])
		o := settle(t, k.Objects, q.ID)[0]
		if o.Status != cks.StatusResolved || chain(o) != resolvedChain {
			t.Fatalf("question %s, chain %s", o.Status, chain(o))
		}
		titled := 0
		for _, e := range o.Edges {
			other := backendtest.MustGetObject(t, k.Objects, e.Src)
			if err := cks.ValidateText("title", other.Title); err != nil {
				t.Errorf("object %d (%s): %v", other.ID, other.Kind, err)
			}
			if strings.HasPrefix(other.Title, "été") || strings.HasPrefix(other.Title, "answer to: été") {
				titled++
			}
		}
		if titled < 2 {
			t.Errorf("only %d linked objects have a title from the accented text; the test lost its point", titled)
		}
	})
}
