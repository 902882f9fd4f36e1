package pipeline_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/llm"
)

// unrelated is a corpus that answers none of the test questions.
func unrelated(t testing.TB) *llm.Corpus {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kitchen.md"), []byte("# Bread\n\nKnead the dough for ten minutes, then let it rise.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := llm.LoadCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// submitWith creates a question awaiting research that names its corpus.
func submitWith(t testing.TB, k *knowledge.Service, q, dir string) cks.Object {
	t.Helper()
	content, _ := json.Marshal(pipeline.Question{Question: q, Corpus: dir})
	obj, err := k.CreateObject(context.Background(), knowledge.NewObject{Kind: cks.KindQuestion, Title: q,
		Content: content, Status: cks.StatusAwaitingResearch, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestPerQuestionCorpus: a question naming a corpus directory is researched
// in it (not in the configured corpus) and resolves citing its files; one
// naming a directory that cannot be loaded parks in needs_input with the
// load error as the reason, without a model call.
func TestPerQuestionCorpus(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k := open(t)
		m := newCounting(nil)
		start(t, pipeline.Config{Store: k.Objects, Changes: k.Changes, Model: m, Corpus: unrelated(t)})
		dir, err := filepath.Abs("testdata/corpus")
		if err != nil {
			t.Fatal(err)
		}
		missing := filepath.Join(t.TempDir(), "no-such-corpus")
		const bad = "Where do the bees dance?"
		got := settle(t, k.Objects, submitWith(t, k.Objects, questions[0], dir).ID, submitWith(t, k.Objects, bad, missing).ID)

		if got[0].Status != cks.StatusResolved || chain(got[0]) != resolvedChain {
			t.Fatalf("with its corpus: %s: %s", got[0].Status, chain(got[0]))
		}
		sc := synthesis(t, k.Objects, got[0])
		for _, c := range sc.Citations {
			if c.Source != "bees.md" {
				t.Errorf("citation %+v is not from the question's corpus", c)
			}
		}
		if len(sc.Citations) == 0 {
			t.Fatal("resolved without citations")
		}

		if got[1].Status != cks.StatusNeedsInput || chain(got[1]) != "test:created→awaiting_research researcher:parked→needs_input" {
			t.Fatalf("with a missing corpus: %s: %s", got[1].Status, chain(got[1]))
		}
		why, err := k.Objects.GetObject(context.Background(), *got[1].Log[1].ReasoningNodeID)
		if err != nil || !strings.Contains(string(why.Content), "does not exist") || !strings.Contains(string(why.Content), missing) {
			t.Fatalf("parking reason %s, %v; want the load error naming %s", why.Content, err, missing)
		}
		if n := m.n("research", bad); n != 0 {
			t.Fatalf("the model was asked %d times about a question whose corpus cannot load", n)
		}
	})
}

// TestCorpusForCaches: a corpus directory is loaded once and reused; a
// failed load is not cached.
func TestCorpusForCaches(t *testing.T) {
	def := unrelated(t)
	e := &pipeline.Env{Corpus: def}
	if c, err := e.CorpusFor(""); c != def || err != nil {
		t.Fatalf("CorpusFor(\"\") = %p, %v; want the configured corpus", c, err)
	}
	a, err := e.CorpusFor("testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := e.CorpusFor("testdata/corpus"); b != a || err != nil {
		t.Fatalf("second load %p, %v; want the cached %p", b, err, a)
	}
	dir := filepath.Join(t.TempDir(), "later")
	if _, err := e.CorpusFor(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("missing directory: %v; want an error naming it", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n\nSome text.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CorpusFor(dir); err != nil {
		t.Fatalf("after the directory appeared: %v", err)
	}
}
