package pipeline_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/llm"
)

// TestQuestionReads: each step of a question reads the question and the
// objects linked to it in a few read transactions of a few reads, however
// many objects earlier rounds linked to it: a question with 40 objects of
// earlier rounds (rejected claims, critiques) reads as much as one with
// 20 (before: a read transaction per linked object, 56 and 96 of 3 reads).
func TestQuestionReads(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k := open(t)
		reads := backendtest.CountReads(k.Driver())
		store := knowledge.New(reads, k.Clock())
		o, err := pipeline.New(pipeline.Config{Store: store, Model: llm.NewOffline(), Corpus: corpus(t)})
		if err != nil {
			t.Fatal(err)
		}
		var got []backendtest.Reads
		for _, earlier := range []int{10, 20} {
			q := submit(t, store, questions[0])
			linkEarlierRounds(t, store, q.ID, earlier)
			reads.Take()
			done, err := o.RunSequential(context.Background(), q.ID)
			if err != nil || done.Status != cks.StatusResolved || chain(done) != resolvedChain {
				t.Fatalf("%s, %v: %s", done.Status, err, chain(done))
			}
			r := reads.Take()
			t.Logf("a question with %d linked objects of earlier rounds: %d steps, %s", 2*earlier, len(done.Log)-1, r)
			got = append(got, r)
		}
		// Per step: the question read before its claim and after it, and
		// at most two reads of linked objects, each one transaction of at
		// most three reads; and the question read once more at the end.
		const steps = 4
		if got[0] != got[1] || got[1].Txs > 4*steps+1 || got[1].Reads > 3*got[1].Txs {
			t.Errorf("a question read %s with 20 objects of earlier rounds, %s with 40; want the same, at most %d read transactions of at most 3 reads",
				got[0], got[1], 4*steps+1)
		}
	})
}

// linkEarlierRounds links n rejected claims and n critiques to question q,
// as earlier rounds leave them.
func linkEarlierRounds(t *testing.T, k *knowledge.Service, q int64, n int) {
	t.Helper()
	var edges []knowledge.NewEdge
	for i := range n {
		c := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: cks.KindClaim, Title: fmt.Sprint("claim ", i),
			Content: []byte(fmt.Sprintf(`{"text":"claim %d","question_id":%d}`, i, q)), Status: cks.StatusRejected, CreatedBy: "researcher"})
		r := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: cks.KindCritique, Title: fmt.Sprint("critique ", i),
			Content: []byte(fmt.Sprintf(`{"text":"critique %d"}`, i)), CreatedBy: "critic"})
		edges = append(edges, knowledge.NewEdge{Src: c.ID, Dst: q, BaseType: cks.BaseDependsOn, SemanticType: cks.SemAnswers},
			knowledge.NewEdge{Src: r.ID, Dst: q, BaseType: cks.BaseDependsOn, SemanticType: cks.SemCritiques})
	}
	if _, err := k.AddEdges(context.Background(), edges); err != nil {
		t.Fatal(err)
	}
}
