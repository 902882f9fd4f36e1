package hub_test

import (
	"context"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

func TestPipelineSettings(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	s, err := hub.ParsePipelineSettings(env(nil))
	if err != nil || s.InProcess || s.Corpus != "" || s.Workers != 1 || s.Poll != 30*time.Second || s.MaxRounds != 3 {
		t.Fatalf("defaults %+v, %v", s, err)
	}
	s, err = hub.ParsePipelineSettings(env(map[string]string{"CKS_PIPELINE_IN_PROCESS": "true", "CKS_PIPELINE_CORPUS": "/srv/docs",
		"CKS_PIPELINE_WORKERS": "4", "CKS_PIPELINE_OBJECT_POLL": "2.5", "CKS_PIPELINE_MAX_ROUNDS": "5"}))
	if err != nil || !s.InProcess || s.Corpus != "/srv/docs" || s.Workers != 4 || s.Poll != 2500*time.Millisecond || s.MaxRounds != 5 {
		t.Fatalf("from env %+v, %v", s, err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	s.RegisterFlags(fs)
	if err := fs.Parse([]string{"--workers", "2", "--poll", "1m", "--corpus", "/x"}); err != nil || s.Workers != 2 || s.Poll != time.Minute || s.Corpus != "/x" || s.MaxRounds != 5 {
		t.Fatalf("flags %+v, %v", s, err)
	}
	for name, v := range map[string]string{"CKS_PIPELINE_IN_PROCESS": "maybe", "CKS_PIPELINE_WORKERS": "0",
		"CKS_PIPELINE_OBJECT_POLL": "soon", "CKS_PIPELINE_MAX_ROUNDS": "-1"} {
		if _, err := hub.ParsePipelineSettings(env(map[string]string{name: v})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v, want an error naming it", name, v, err)
		}
	}
	if _, err := hub.ParseSettings(env(map[string]string{"CKS_PIPELINE_WORKERS": "x"})); err == nil {
		t.Error("ParseSettings accepted a bad CKS_PIPELINE_WORKERS")
	}
}

// TestNewPipeline: the orchestrator a hub or a pipeline agent runs — the
// shipped corpus by default, the model from CKS_LLM_* — resolves a question
// and publishes its step events on the bus it is given; a missing corpus or
// a bad model setting is an error naming it.
func TestNewPipeline(t *testing.T) {
	st, err := backend.Open(context.Background(), filepath.Join(t.TempDir(), "cks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	def, _ := hub.ParsePipelineSettings(nil)
	if _, err := hub.NewPipeline(st.Objects, st.Changes, hub.PipelineSettings{Workers: 1, Poll: time.Second, MaxRounds: 3, Corpus: "/does/not/exist"}, nil, nil, nil, "t"); err == nil ||
		!strings.Contains(err.Error(), "/does/not/exist") {
		t.Fatalf("missing corpus: %v", err)
	}
	bad := func(k string) string { return map[string]string{"CKS_LLM_PROVIDER": "bogus"}[k] }
	if _, err := hub.NewPipeline(st.Objects, st.Changes, def, bad, nil, nil, "t"); err == nil || !strings.Contains(err.Error(), "CKS_LLM_PROVIDER") {
		t.Fatalf("bad provider: %v", err)
	}
	bus := &events.Bus{}
	evs, unsub := bus.Subscribe()
	defer unsub()
	o, err := hub.NewPipeline(st.Objects, st.Changes, def, func(string) string { return "" }, bus, nil, "t")
	if err != nil {
		t.Fatal(err)
	}
	q, err := st.Objects.CreateObject(context.Background(), knowledge.NewObject{Kind: cks.KindQuestion,
		Content: []byte(`{"question":"How does cks stop a running task?"}`), Status: cks.StatusAwaitingResearch, CreatedBy: "t"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.RunSequential(context.Background(), q.ID)
	if err != nil || got.Status != cks.StatusResolved {
		t.Fatalf("%s, %v", got.Status, err)
	}
	completed := 0
	for len(evs) > 0 {
		if e := <-evs; e.Type == events.AgentStepCompleted {
			completed++
		}
	}
	if completed != 4 {
		t.Fatalf("%d step completions on the bus, want 4", completed)
	}
}
