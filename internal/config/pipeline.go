package config

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Names of the pipeline's environment variables.
const (
	EnvPipelineInProcess = "CKS_PIPELINE_IN_PROCESS"
	EnvPipelineCorpus    = "CKS_PIPELINE_CORPUS"
	EnvPipelineWorkers   = "CKS_PIPELINE_WORKERS"
	EnvPipelinePoll      = "CKS_PIPELINE_OBJECT_POLL"
	EnvPipelineMaxRounds = "CKS_PIPELINE_MAX_ROUNDS"
)

// Defaults of Pipeline (pipeline.DefaultPoll and pipeline.DefaultMaxRounds
// are these).
const (
	DefaultPipelineWorkers   = 1
	DefaultPipelinePoll      = 30 * time.Second
	DefaultPipelineMaxRounds = 3
)

// Pipeline are where and how the research pipeline (ADR-007) runs:
// `cks agent pipeline` reads them (flags override), and a hub reads them to
// run the orchestrator in-process when InProcess is set.
type Pipeline struct {
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

// ParsePipeline reads Pipeline with getenv (nil: an empty environment); a
// bad value is an error naming the variable. The corpus directory is not
// opened here.
func ParsePipeline(getenv Getenv) (Pipeline, error) {
	getenv = orEmpty(getenv)
	s := Pipeline{Workers: DefaultPipelineWorkers, Poll: DefaultPipelinePoll, MaxRounds: DefaultPipelineMaxRounds,
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
		d, err := ParseInterval(v)
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
func (s *Pipeline) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.Corpus, "corpus", s.Corpus, "default corpus directory `DIR` of .md/.txt files (env "+EnvPipelineCorpus+"; default the corpus shipped in the binary)")
	fs.IntVar(&s.Workers, "workers", s.Workers, "workers per pipeline step (env "+EnvPipelineWorkers+")")
	fs.Func("poll", "fallback poll `DURATION` of the step workers, e.g. 30s (env "+EnvPipelinePoll+"; default "+s.Poll.String()+")", func(v string) error {
		d, err := ParseInterval(v)
		if err == nil {
			s.Poll = d
		}
		return err
	})
	fs.IntVar(&s.MaxRounds, "max-rounds", s.MaxRounds, "rounds before an unresolved question parks in needs_input (env "+EnvPipelineMaxRounds+")")
}

// Validate checks s after flags were applied.
func (s Pipeline) Validate() error {
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
func (s Pipeline) CorpusLabel() string {
	if s.Corpus == "" {
		return "shipped"
	}
	return s.Corpus
}

// pipelineSettings are the research pipeline's.
func pipelineSettings() []Setting {
	hubs := hubReaders()
	pipe := append(hubReaders(), "agent pipeline")
	pipeFlag := []string{"agent pipeline"}
	return []Setting{
		{Env: EnvPipelineInProcess, Readers: hubs, Doc: "the hub runs the research pipeline in its own process",
			Value: func(v *Values) string { return strconv.FormatBool(v.Pipeline.InProcess) }},
		{Env: EnvPipelineCorpus, Flag: "corpus", Readers: pipe, FlagOn: pipeFlag, Doc: "the default corpus directory of .md/.txt files",
			Default: "the corpus shipped in the binary"},
		{Env: EnvPipelineWorkers, Flag: "workers", Readers: pipe, FlagOn: pipeFlag, Doc: "workers per pipeline step",
			Value: func(v *Values) string { return strconv.Itoa(v.Pipeline.Workers) }},
		{Env: EnvPipelinePoll, Flag: "poll", Readers: pipe, FlagOn: pipeFlag, Doc: "the fallback poll of the step workers",
			Value: func(v *Values) string { return dur(v.Pipeline.Poll) }},
		{Env: EnvPipelineMaxRounds, Flag: "max-rounds", Readers: pipe, FlagOn: pipeFlag,
			Doc:   "rounds before an unresolved question parks in needs_input",
			Value: func(v *Values) string { return strconv.Itoa(v.Pipeline.MaxRounds) }},
	}
}
