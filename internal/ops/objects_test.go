package ops_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// linkedObject creates an object with n objects linked to it, each with
// a log of its own, and returns its id.
func linkedObject(t *testing.T, k *knowledge.Service, n int) int64 {
	t.Helper()
	q := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: cks.KindQuestion, Title: "q",
		Content: []byte(`{"question":"q"}`), Status: cks.StatusAwaitingResearch, CreatedBy: "test"})
	var edges []knowledge.NewEdge
	for i := range n {
		c := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: cks.KindClaim, Title: fmt.Sprint("claim ", i),
			Status: cks.StatusProposed, CreatedBy: "test"})
		edges = append(edges, knowledge.NewEdge{Src: c.ID, Dst: q.ID, BaseType: cks.BaseDependsOn, SemanticType: cks.SemAnswers})
	}
	if _, err := k.AddEdges(context.Background(), edges); err != nil {
		t.Fatal(err)
	}
	return q.ID
}

// TestObjectReads: get_object reads an object, its heads and every object
// linked to it, with their logs and edges, in one read transaction, and
// the studio's object page (ObjectPage: what get_object and
// list_object_versions answer) reads in one too; neither reads more for 20
// linked objects than for 2 (before: 2+n read transactions of 4+3n reads
// for get_object, 4+n of 6+3n for the page).
func TestObjectReads(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		reads := backendtest.CountReads(s.Driver())
		svc := &ops.Services{Objects: knowledge.New(reads, s.Clock())}
		ctx := auth.WithLocalOperator(context.Background())
		got := map[string][]backendtest.Reads{}
		for _, n := range []int{2, 20} {
			id := linkedObject(t, svc.Objects, n)
			reads.Take()
			v, err := ops.GetObject.Do(ctx, svc, &cks.ObjectInput{ObjectID: id})
			if err != nil || len(v.Reasoning) != n || len(v.Heads) != 1 || len(v.Reasoning[0].Log) != 1 || len(v.Reasoning[0].Edges) != 1 {
				t.Fatalf("get_object %d: %d linked, %d heads, %v", id, len(v.Reasoning), len(v.Heads), err)
			}
			got["get_object"] = append(got["get_object"], reads.Take())
			pv, vl, err := ops.ObjectPage(ctx, svc, id)
			if err != nil || len(pv.Reasoning) != n || len(vl.Versions) != 1 {
				t.Fatalf("object page %d: %d linked, %d versions, %v", id, len(pv.Reasoning), len(vl.Versions), err)
			}
			got["object page"] = append(got["object page"], reads.Take())
			// The page shows what the two operations answer.
			wantVL, err := ops.ListObjectVersionsOp.Do(ctx, svc, &cks.ObjectInput{ObjectID: id})
			if err != nil || backendtest.AsJSON(t, pv) != backendtest.AsJSON(t, v) || backendtest.AsJSON(t, vl) != backendtest.AsJSON(t, wantVL) {
				t.Fatalf("object page %d: %v\n %s\n %s\nwant get_object's and list_object_versions'\n %s\n %s", id, err,
					backendtest.AsJSON(t, pv), backendtest.AsJSON(t, vl), backendtest.AsJSON(t, v), backendtest.AsJSON(t, wantVL))
			}
		}
		for what, rs := range got {
			t.Logf("%s with 2 linked objects: %s; with 20: %s", what, rs[0], rs[1])
			if rs[0] != rs[1] || rs[0].Txs != 1 || rs[0].Reads > 7 {
				t.Errorf("%s: %s with 2 linked objects, %s with 20; want one read transaction of at most 7 reads for both", what, rs[0], rs[1])
			}
		}
	})
}
