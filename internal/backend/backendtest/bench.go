package backendtest

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// Bench measures the liveness hot paths of a backend: the heartbeat upsert every
// agent process runs each interval, and the reads behind list_processes and
// process_status with 100 instances recorded.
func Bench(b *testing.B, newStore NewStore) {
	b.Run("UpsertAgentLiveness", func(b *testing.B) {
		s := newStore(b)
		r := Liveness("bench-1", "critic", 0)
		MustUpsert(b, s, r)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			r.LastHeartbeatAt = T0.Add(time.Duration(i) * time.Millisecond)
			if err := s.Liveness.UpsertAgentLiveness(Ctx(b), r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("UpsertAgentLivenessParallel", func(b *testing.B) {
		s := newStore(b)
		var workers atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			r := Liveness(fmt.Sprintf("bench-p-%d", workers.Add(1)), "pipeline", 0)
			i := 0
			for pb.Next() {
				i++
				r.LastHeartbeatAt = T0.Add(time.Duration(i) * time.Millisecond)
				if err := s.Liveness.UpsertAgentLiveness(Ctx(b), r); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("ListAgentLiveness100", func(b *testing.B) {
		s := seed(b, newStore(b), 100)
		for range b.N {
			rows, err := s.Liveness.ListAgentLiveness(Ctx(b))
			if err != nil || len(rows) != 100 {
				b.Fatal(len(rows), err)
			}
		}
	})
	b.Run("LatestAgentLiveness100", func(b *testing.B) {
		s := seed(b, newStore(b), 100)
		for range b.N {
			if _, err := s.Liveness.LatestAgentLiveness(Ctx(b), "critic"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchLedger measures the ledger's hot path on a backend: enqueue one task,
// and claim-then-complete one task, each per op.
func BenchLedger(b *testing.B, newStore NewStore) {
	b.Run("Enqueue", func(b *testing.B) {
		s := newStore(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, _, err := s.Tasks.Enqueue(Ctx(b), cks.NewTask{Type: "bench", Priority: i % 10}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ClaimComplete", func(b *testing.B) {
		s := newStore(b)
		for i := range b.N {
			if _, _, err := s.Tasks.Enqueue(Ctx(b), cks.NewTask{Type: "bench", Priority: i % 10}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			ts, err := s.Tasks.Claim(Ctx(b), ledger.ClaimParams{Worker: "bench", Types: []string{"bench"}, N: 1, Lease: time.Hour})
			if err != nil || len(ts) != 1 {
				b.Fatal(len(ts), err)
			}
			if _, err := s.Tasks.Complete(Ctx(b), ts[0].ID, ts[0].LeaseToken, false, "ok"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// seed records n critic instances in s and resets the benchmark timer.
func seed(b *testing.B, s *backend.Backend, n int) *backend.Backend {
	b.Helper()
	for i := range n {
		MustUpsert(b, s, Liveness(fmt.Sprintf("i-%03d", i), "critic", time.Duration(i)*time.Second))
	}
	b.ReportAllocs()
	b.ResetTimer()
	return s
}

// BenchKnowledge measures the knowledge store's hot paths: a pipeline step's
// claim and transition of one object (with a reasoning node attached), a
// linear version write, and the read of an object with its log and edges.
// The knowledge methods of newStore's stores are the only ones it calls.
func BenchKnowledge(b *testing.B, newStore NewStore) {
	b.Run("ClaimTransition", func(b *testing.B) {
		s := newStore(b)
		for range b.N {
			MustCreateObject(b, s.Objects, knowledge.NewObject{Kind: "question", Status: "todo", Content: json.RawMessage(`{"q":"why?"}`)})
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			os, err := s.Objects.ClaimObjects(Ctx(b), "todo", "bench", 1)
			if err != nil || len(os) != 1 {
				b.Fatal(len(os), err)
			}
			if _, _, err := s.Objects.TransitionObject(Ctx(b), os[0].ID, os[0].ClaimToken, knowledge.ObjectTransition{From: "todo", To: "done",
				Action: "completed", Agent: "bench", Content: json.RawMessage(`{"q":"why?","a":"because"}`), Reasoning: 0,
				Attach: []knowledge.Attachment{{Object: knowledge.NewObject{Kind: "critique", Content: json.RawMessage(`{"ok":true}`)},
					BaseType: "depends_on", SemanticType: "critiques"}}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("WriteVersion", func(b *testing.B) {
		s := newStore(b)
		o := MustCreateObject(b, s.Objects, knowledge.NewObject{Kind: "claim"})
		head := o.HeadVersion
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			v, err := s.Objects.WriteVersion(Ctx(b), o.ID, head, json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), "bench")
			if err != nil {
				b.Fatal(err)
			}
			head = v.Version
		}
	})
	b.Run("GetObject", func(b *testing.B) {
		s := newStore(b)
		o := MustCreateObject(b, s.Objects, knowledge.NewObject{Kind: "question", Status: "todo"})
		for range 10 {
			c := MustCreateObject(b, s.Objects, knowledge.NewObject{Kind: "claim"})
			if _, err := s.Objects.AddEdges(Ctx(b), []knowledge.NewEdge{{Src: c.ID, Dst: o.ID, BaseType: "supports"}}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if got, err := s.Objects.GetObject(Ctx(b), o.ID); err != nil || len(got.Edges) != 10 {
				b.Fatal(len(got.Edges), err)
			}
		}
	})
	// get_object's read: the object, its heads and its 10 linked objects
	// with their logs and edges, in one read transaction.
	b.Run("View", func(b *testing.B) {
		s := newStore(b)
		o := MustCreateObject(b, s.Objects, knowledge.NewObject{Kind: "question", Status: "todo"})
		edges := make([]knowledge.NewEdge, 10)
		for i := range edges {
			c := MustCreateObject(b, s.Objects, knowledge.NewObject{Kind: "claim", Status: "proposed"})
			edges[i] = knowledge.NewEdge{Src: c.ID, Dst: o.ID, BaseType: "supports"}
		}
		if _, err := s.Objects.AddEdges(Ctx(b), edges); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if v, err := s.Objects.View(Ctx(b), o.ID); err != nil || len(v.Reasoning) != 10 {
				b.Fatal(len(v.Reasoning), err)
			}
		}
	})
}
