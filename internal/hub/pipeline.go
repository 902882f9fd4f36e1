package hub

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/cks-dev/cks/internal/base/corpus"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/llm"
)

// PipelineConfig is what NewPipeline builds the research pipeline from.
type PipelineConfig struct {
	Store   pipeline.Store
	Changes pipeline.Watcher
	// Settings are where and how it runs (config.ParsePipeline, a pipeline
	// agent's flags applied).
	Settings config.Pipeline
	// LLM is the model (config.ParseLLM: CKS_LLM_PROVIDER and the rest).
	LLM config.LLM
	// DefaultLease is the ledger's default lease (config.Ledger,
	// CKS_STALE_WINDOW; 0: config.DefaultLease): the hubs' lease reaper
	// releases an object claim not renewed within it.
	DefaultLease time.Duration
	// Bus receives the step events (nil: none), Logger says how it is
	// configured (nil: nothing), Name prefixes the workers' names (their
	// claims show it).
	Bus    *events.Bus
	Logger *slog.Logger
	Name   string
}

// NewPipeline builds the orchestrator c describes: the model c.LLM names,
// the default corpus loaded (an error names the directory), step events
// published on c.Bus. Every error is a configuration error.
func NewPipeline(c PipelineConfig) (*pipeline.Orchestrator, error) {
	s, log := c.Settings, c.Logger
	if err := s.Validate(); err != nil {
		return nil, err
	}
	model, err := llm.New(c.LLM)
	if err != nil {
		return nil, err
	}
	var corp *llm.Corpus
	if s.Corpus == "" {
		corp, err = llm.LoadCorpusFS(corpus.FS, ".")
	} else {
		corp, err = llm.LoadCorpus(s.Corpus)
	}
	if err != nil {
		return nil, fmt.Errorf("pipeline corpus (--corpus / %s): %w", config.EnvPipelineCorpus, err)
	}
	if log != nil {
		log.Info("research pipeline configured", "model", model.Name(), "corpus", s.CorpusLabel(), "passages", corp.Len(),
			"workers_per_step", s.Workers, "poll", s.Poll.String(), "max_rounds", s.MaxRounds)
	}
	// An object claim's lease is the default lease (the hubs' lease
	// reaper releases a claim not renewed within it): a step renews its
	// claim every third of it, at most every DefaultClaimTouch.
	lease := cmp.Or(c.DefaultLease, config.DefaultLease)
	return pipeline.New(pipeline.Config{Store: c.Store, Changes: c.Changes, Model: model, Corpus: corp, Workers: s.Workers, Poll: s.Poll,
		MaxRounds: s.MaxRounds, Bus: c.Bus, Logger: log, Name: c.Name,
		ClaimTouch: min(pipeline.DefaultClaimTouch, lease/3)})
}
