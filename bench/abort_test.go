package bench_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cks-dev/cks/bench"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/corpus"
	"github.com/cks-dev/cks/internal/service/llm"
)

// TestAbort runs a few rounds of the abort benchmark on both backends: every
// round must end with a confirmed abort (bench.Abort fails otherwise).
func TestAbort(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		var calls int
		r, err := bench.Abort(context.Background(), open(t), open(t), bench.AbortConfig{Rounds: 3,
			Progress: func(string, int, int) { calls++ }})
		if err != nil {
			t.Fatal(err)
		}
		if r.Rounds != 3 || r.StopP50 <= 0 || r.UpdateP50 <= 0 || r.LiveP50 <= 0 || calls != 6 {
			t.Fatalf("result %+v after %d progress calls", r, calls)
		}
		t.Logf("stop→confirmed p50 %s, update→confirmed p50 %s, live update p50 %s", r.StopP50, r.UpdateP50, r.LiveP50)
	})
}

// TestLiveness runs the liveness benchmark on a small history on both
// backends: process_status must find the live instance among the history
// and list_processes must return every row (bench.Liveness fails otherwise).
func TestLiveness(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		r, err := bench.Liveness(context.Background(), open(t).Liveness, bench.LivenessConfig{History: 50, Samples: 10})
		if err != nil {
			t.Fatal(err)
		}
		if r.History != 50 || r.HeartbeatP50 <= 0 || r.StatusP50 <= 0 || r.ListP50 <= 0 || r.ReadBackP50 <= 0 {
			t.Fatalf("result %+v", r)
		}
	})
}

// TestPipeline runs the pipeline benchmark on a few questions of the shipped
// corpus on both backends, with notifications and with the poll only.
func TestPipeline(t *testing.T) {
	c, err := llm.LoadCorpusFS(corpus.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, notify := range []bool{true, false} {
		t.Run(fmt.Sprintf("notify=%v", notify), func(t *testing.T) {
			backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
				r, err := bench.Pipeline(context.Background(), open(t), bench.PipelineConfig{Questions: 8, Corpus: c,
					Question: bench.ResearchQuestion, NoNotify: !notify, Poll: 20 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				if r.Questions != 8 || r.Transitions < 32 || r.ObjectsRate <= 0 || r.CoordP50 <= 0 || r.WakeP50 <= 0 {
					t.Fatalf("result %+v", r)
				}
			})
		})
	}
}

// TestMergeAndSweep runs small versions of the merge and sweeper benchmarks
// on both backends.
func TestMergeAndSweep(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		m, err := bench.Merge(context.Background(), st, bench.MergeConfig{Fields: 50, History: 30, Merges: 3})
		if err != nil || m.Merges != 3 || m.MergeP50 <= 0 {
			t.Fatalf("merge: %+v, %v", m, err)
		}
		s, err := bench.Sweep(context.Background(), open(t), bench.SweepConfig{Objects: 200})
		if err != nil || len(s.Pass) != 4 || s.Found["graph_health"] == 0 {
			t.Fatalf("sweep: %+v, %v", s, err)
		}
	})
}

// TestDelayed runs a few tasks of the delayed-task benchmark on both
// backends: every task is claimed by the agent, none before its run_after
// (bench.Delayed fails when one is not claimed).
func TestDelayed(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		r, err := bench.Delayed(context.Background(), open(t), open(t), bench.DelayedConfig{Tasks: 3, Lead: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if r.Tasks != 3 || r.Early != 0 || r.LatenessP50 < 0 {
			t.Fatalf("result %+v", r)
		}
		t.Logf("delayed-task lateness p50 %s, p99 %s, max %s", r.LatenessP50, r.LatenessP99, r.LatenessMax)
	})
}
