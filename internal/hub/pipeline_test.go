package hub_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// TestNewPipeline: the orchestrator a hub or a pipeline agent runs — the
// shipped corpus by default, the model its settings name — resolves a
// question and publishes its step events on the bus it is given; a missing
// corpus or a bad model is an error naming it.
func TestNewPipeline(t *testing.T) {
	st, err := backend.Open(context.Background(), filepath.Join(t.TempDir(), "cks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	def, _ := config.ParsePipeline(nil)
	if _, err := hub.NewPipeline(hub.PipelineConfig{Store: st.Objects, Changes: st.Changes,
		Settings: config.Pipeline{Workers: 1, Poll: time.Second, MaxRounds: 3, Corpus: "/does/not/exist"}, Name: "t"}); err == nil ||
		!strings.Contains(err.Error(), "/does/not/exist") {
		t.Fatalf("missing corpus: %v", err)
	}
	if _, err := hub.NewPipeline(hub.PipelineConfig{Store: st.Objects, Changes: st.Changes, Settings: def,
		LLM: config.LLM{Provider: "bogus"}, Name: "t"}); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("bad provider: %v", err)
	}
	bus := &events.Bus{}
	evs, unsub := bus.Subscribe()
	defer unsub()
	o, err := hub.NewPipeline(hub.PipelineConfig{Store: st.Objects, Changes: st.Changes, Settings: def, Bus: bus, Name: "t"})
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
