package hub

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/base/corpus"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/llm"
)

// PipelineSettings are where and how the research pipeline (ADR-007) runs:
// `cks agent pipeline` reads them (flags override), and a hub reads them to
// run the orchestrator in-process when InProcess is set.
type PipelineSettings struct {
	// InProcess runs the orchestrator inside the hub, its step events on
	// the hub's bus (CKS_PIPELINE_IN_PROCESS, default false: `cks dev`
	// starts `cks agent pipeline` instead).
	InProcess bool
	// Corpus is the default corpus directory (CKS_PIPELINE_CORPUS); empty
	// means the corpus shipped in the binary (package corpus).
	Corpus string
	// Workers per step (CKS_PIPELINE_WORKERS, default 1).
	Workers int
	// Poll is the fallback poll of every step worker
	// (CKS_PIPELINE_OBJECT_POLL, default 30 s).
	Poll time.Duration
	// MaxRounds bounds the send-backs before a question parks
	// (CKS_PIPELINE_MAX_ROUNDS, default 3).
	MaxRounds int
}

// Names of the pipeline's environment variables.
const (
	EnvPipelineInProcess = "CKS_PIPELINE_IN_PROCESS"
	EnvPipelineCorpus    = "CKS_PIPELINE_CORPUS"
	EnvPipelineWorkers   = "CKS_PIPELINE_WORKERS"
	EnvPipelinePoll      = "CKS_PIPELINE_OBJECT_POLL"
	EnvPipelineMaxRounds = "CKS_PIPELINE_MAX_ROUNDS"
)

// ParsePipelineSettings reads PipelineSettings with getenv; a bad value is
// an error naming the variable. The corpus directory is not opened here
// (NewPipeline does).
func ParsePipelineSettings(getenv func(string) string) (PipelineSettings, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	s := PipelineSettings{Workers: 1, Poll: pipeline.DefaultPoll, MaxRounds: pipeline.DefaultMaxRounds,
		Corpus: strings.TrimSpace(getenv(EnvPipelineCorpus))}
	if v := strings.TrimSpace(getenv(EnvPipelineInProcess)); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return s, fmt.Errorf("%s=%q: expected true or false", EnvPipelineInProcess, v)
		}
		s.InProcess = b
	}
	for _, n := range []struct {
		name string
		dst  *int
	}{{EnvPipelineWorkers, &s.Workers}, {EnvPipelineMaxRounds, &s.MaxRounds}} {
		if v := strings.TrimSpace(getenv(n.name)); v != "" {
			i, err := strconv.Atoi(v)
			if err != nil || i < 1 {
				return s, fmt.Errorf("%s=%q: expected a positive integer", n.name, v)
			}
			*n.dst = i
		}
	}
	if v := strings.TrimSpace(getenv(EnvPipelinePoll)); v != "" {
		d, err := agents.ParseInterval(v)
		if err != nil {
			return s, fmt.Errorf("%s: %w", EnvPipelinePoll, err)
		}
		s.Poll = d
	}
	return s, nil
}

// RegisterFlags adds --corpus, --workers, --poll and --max-rounds, which
// override s (already read from the environment). Call Validate after
// parsing.
func (s *PipelineSettings) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.Corpus, "corpus", s.Corpus, "default corpus directory `DIR` of .md/.txt files (env "+EnvPipelineCorpus+"; default the corpus shipped in the binary)")
	fs.IntVar(&s.Workers, "workers", s.Workers, "workers per pipeline step (env "+EnvPipelineWorkers+")")
	fs.Func("poll", "fallback poll `DURATION` of the step workers, e.g. 30s (env "+EnvPipelinePoll+"; default "+s.Poll.String()+")", func(v string) error {
		d, err := agents.ParseInterval(v)
		if err == nil {
			s.Poll = d
		}
		return err
	})
	fs.IntVar(&s.MaxRounds, "max-rounds", s.MaxRounds, "rounds before an unresolved question parks in needs_input (env "+EnvPipelineMaxRounds+")")
}

// Validate checks s after flags were applied.
func (s PipelineSettings) Validate() error {
	switch {
	case s.Workers < 1:
		return fmt.Errorf("--workers: expected a positive integer, got %d", s.Workers)
	case s.MaxRounds < 1:
		return fmt.Errorf("--max-rounds: expected a positive integer, got %d", s.MaxRounds)
	case s.Poll <= 0:
		return fmt.Errorf("--poll: expected a positive duration, got %s", s.Poll)
	}
	return nil
}

// CorpusLabel names the default corpus for logs: its directory, or
// "shipped" for the embedded one.
func (s PipelineSettings) CorpusLabel() string {
	if s.Corpus == "" {
		return "shipped"
	}
	return s.Corpus
}

// NewPipeline builds the orchestrator s describes over st: the model from
// the environment (llm.FromEnv with getenv, os.Getenv when nil: CKS_LLM_PROVIDER and the rest;
// an error names the variable), the default corpus loaded (an error names
// the directory), step events published on bus. name prefixes the workers'
// names (their claims show it). Every error is a configuration error.
func NewPipeline(st pipeline.Store, changes pipeline.Watcher, s PipelineSettings, getenv func(string) string, bus *events.Bus, log *slog.Logger, name string) (*pipeline.Orchestrator, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	model, err := llm.FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	var c *llm.Corpus
	if s.Corpus == "" {
		c, err = llm.LoadCorpusFS(corpus.FS, ".")
	} else {
		c, err = llm.LoadCorpus(s.Corpus)
	}
	if err != nil {
		return nil, fmt.Errorf("pipeline corpus (--corpus / %s): %w", EnvPipelineCorpus, err)
	}
	if log != nil {
		log.Info("research pipeline configured", "model", model.Name(), "corpus", s.CorpusLabel(), "passages", c.Len(),
			"workers_per_step", s.Workers, "poll", s.Poll.String(), "max_rounds", s.MaxRounds)
	}
	// An object claim's lease is the default lease (the hubs' lease
	// reaper releases a claim not renewed within it): a step renews its
	// claim every third of it, at most every DefaultClaimTouch.
	led, err := ledger.SettingsFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	return pipeline.New(pipeline.Config{Store: st, Changes: changes, Model: model, Corpus: c, Workers: s.Workers, Poll: s.Poll,
		MaxRounds: s.MaxRounds, Bus: bus, Logger: log, Name: name,
		ClaimTouch: min(pipeline.DefaultClaimTouch, led.DefaultLease/3)})
}
