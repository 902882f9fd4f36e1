package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/cks-dev/cks/agents"
	"github.com/cks-dev/cks/backend"
	"github.com/cks-dev/cks/hub"
	"github.com/cks-dev/cks/llm"
	"github.com/cks-dev/cks/worker"
)

// cmdAgent runs one standalone agent process: `cks agent KIND [flags]`, or
// `cks agent exec --types T1,T2 [flags] -- COMMAND ARGS…`. The first SIGTERM
// or SIGINT (ctx) and a stop request both drain it; a second signal during
// the drain exits at once.
func cmdAgent(ctx context.Context, args []string, e env) error {
	kinds := strings.Join(agents.Kinds(), ", ")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("%w: agent needs a kind: one of %s", errUsage, kinds)
	}
	kind := args[0]
	set, err := agents.SettingsFromEnv(kind, e.getenv)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if len(set.Types) == 0 {
		// critic → critique, enrichment → rederive and enrich,
		// fork_resolution → resolve_fork, unless CKS_<AGENT>_TYPES says.
		set.Types = agents.DefaultTypes(kind)
	}
	fs := flagSet("agent "+kind, e)
	var sf storeFlags
	sf.register(fs)
	set.RegisterFlags(fs)
	var ps hub.PipelineSettings
	if kind == "pipeline" {
		// The pipeline agent runs the research orchestrator (ADR-007) for
		// its lifetime; its knobs come from CKS_PIPELINE_*, flags win.
		if ps, err = hub.ParsePipelineSettings(e.getenv); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		ps.RegisterFlags(fs)
	}
	noFastStop := fs.Bool("no-fast-stop", false, "obey stop requests only at the liveness tick (ADR-016 baseline; for measurements)")
	var command []string
	rest := args[1:]
	for i, a := range rest {
		if a == "--" {
			rest, command = rest[:i], rest[i+1:]
			break
		}
	}
	pos, err := parse(fs, rest)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: agent %s takes no arguments before --, got %q", errUsage, kind, pos)
	}
	if err := set.Finish(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if kind == "pipeline" {
		if err := ps.Validate(); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		if ps.Corpus != "" {
			// Fail before touching the store: a missing corpus is a usage error.
			if st, err := os.Stat(ps.Corpus); err != nil || !st.IsDir() {
				return fmt.Errorf("%w: pipeline corpus %q (--corpus / %s): not an existing directory", errUsage, ps.Corpus, hub.EnvPipelineCorpus)
			}
		}
		if _, err := llm.FromEnv(e.getenv); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	var resolve worker.Resolver
	switch {
	case kind == "exec" && (len(command) == 0 || len(set.Types) == 0):
		return fmt.Errorf("%w: agent exec needs --types T1,T2 and a command after --", errUsage)
	case kind == "exec":
		resolve = agents.Exec(agents.ExecConfig{Command: command})
	case len(command) > 0:
		return fmt.Errorf("%w: only agent exec takes a command", errUsage)
	}
	var model llm.Model
	if kind == "critic" || kind == "fork_resolution" {
		// The model decides when it implements the agents' optional
		// methods (agents.ContradictionJudge, agents.ConflictModel); the
		// offline model does not, so the documented rules decide.
		if model, err = llm.FromEnv(e.getenv); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	_, dbURL := sf.resolve(e)
	st, err := backend.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	switch kind {
	case "critic":
		resolve = agents.Critic(st.Objects, agents.CriticConfig{Model: model})
	case "enrichment":
		resolve = agents.Enrichment(st.Objects)
	case "fork_resolution":
		resolve = agents.ForkResolver(st.Objects, agents.ForkConfig{Model: model})
	}
	log := logger(e.stderr)
	var background func(context.Context) error
	if kind == "pipeline" {
		host, _ := os.Hostname()
		orch, err := hub.NewPipeline(st.Objects, st.Changes, ps, e.getenv, nil, log.With("component", "pipeline"), fmt.Sprintf("pipeline@%s:%d", host, os.Getpid()))
		if err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		background = orch.Run
	} else if resolve == nil {
		log.Info("no resolver for this kind yet: the agent reports liveness and obeys stop, and claims nothing", "process_kind", kind)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(again)
		select {
		case <-again:
			fmt.Fprintln(e.stderr, "cks agent: second signal during the drain: exiting at once")
			os.Exit(1)
		case <-done:
		}
	}()
	return agents.Run(ctx, agents.ServicesOf(st), set, resolve, agents.Options{Logger: log, NoFastStop: *noFastStop, Background: background})
}
