package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks/cmd/cks/internal/shutdown"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/runtime/telemetry"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/llm"
)

// agentRun is what `cks agent KIND` was asked to run.
type agentRun struct {
	kind       string
	set        agents.Settings
	ps         config.Pipeline
	sf         storeFlags
	noFastStop bool
	// create lets the agent create a SQLite database that does not exist
	// (--create); without it a missing one is refused.
	create  bool
	command []string // exec's command, after --
	// llm is the pipeline's model (CKS_LLM_*), read by check.
	llm config.LLM
}

// openBackend opens the database at url as a process of this host does:
// with the test-only clock options of its environment
// (config.ParseTestClock), and the ledger's settings of its environment
// (config.ParseLedger: the default lease and the retry backoff, as the
// hubs read them).
func openBackend(ctx context.Context, url string, e env) (*backend.Backend, error) {
	tc, err := config.ParseTestClock(e.getenv)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	set, err := config.ParseLedger(e.getenv)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	st, err := backend.Open(ctx, url, backend.ClockOptions(tc)...)
	if err != nil {
		return nil, err
	}
	if err := st.Tasks.Configure(set); err != nil {
		st.Close() //nolint:errcheck // the settings' error is the one to report
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return st, nil
}

// cmdAgent runs one standalone agent process: `cks agent KIND [flags]`, or
// `cks agent exec --types T1,T2 [flags] -- COMMAND ARGS…`. The first SIGTERM
// or SIGINT (ctx) and a stop request both drain it: the task in hand may
// finish within --drain-timeout, then it is interrupted and given back
// (OPEN, its attempt not counted). A second signal interrupts it at once,
// a third exits at once. A signal before the agent has started (even
// before main: package shutdown) ends it cleanly too, with status 0.
func cmdAgent(ctx context.Context, args []string, e env) error {
	a, err := parseAgent(args, e)
	if err != nil {
		return err
	}
	if err := a.check(e); err != nil {
		return err
	}
	catchSIGPIPE() // under cks dev, stderr is a pipe to it: a drain must not die of its end
	var model llm.Model
	if a.kind == "critic" || a.kind == "fork_resolution" {
		// The model decides when it implements the agents' optional
		// methods (agents.ContradictionJudge, agents.ConflictModel); the
		// offline model does not, so the documented rules decide.
		if model, err = envModel(e); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	log := logger(e.stderr)
	dir, dbURL := a.sf.resolve(e)
	name, err := agentDatabase(dir, dbURL, a.create)
	if err != nil {
		return err
	}
	st, err := openBackend(ctx, dbURL, e)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, errUsage) {
			log.Info(agents.MsgStoppedBeforeStart, "process_kind", a.kind, "err", err)
			return nil
		}
		return err
	}
	defer st.Close()
	log.Info("agent database opened", "process_kind", a.kind, "database", name, "backend", st.Dialect())
	// An agent claims and ends attempts through a ledger of its own: with
	// tracing on (OTEL_*), it records their spans as a hub does
	// (docs/tracing.md); off, nothing.
	tracing, err := config.ParseTracing(e.getenv)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	tracer, stopTracing, err := telemetry.Start(ctx, tracing, nil, log)
	if err != nil {
		return err
	}
	defer func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(fctx); err != nil {
			log.Warn("flushing the traces at exit", "err", err)
		}
	}()
	if tracer != nil {
		st.Tasks.ObserveWith(tracer)
	}
	resolve, background, err := a.work(st, model, log)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	defer close(done)
	interrupt := make(chan struct{})
	go hurryOnSignals(ctx, done, interrupt, e)
	return agents.Run(ctx, agents.ServicesOf(st), a.set, resolve, agents.Options{Logger: log, NoFastStop: a.noFastStop, Background: background,
		Interrupt: interrupt, Clock: st.Clock()}) // heartbeats and leases on the database's clock
}

// agentDatabase is the database an agent opens, named for its log (its
// password redacted, a SQLite file by its absolute path). A SQLite file
// that does not exist is refused unless create is set, naming where it was
// looked for: the data directory was found as the CLI finds it (--data-dir,
// CKS_DATA_DIR, else the nearest .cks here or above), and an agent that
// created a new, empty database there would wait on it for tasks no hub
// gives it.
func agentDatabase(dir datadir.Dir, url string, create bool) (string, error) {
	dialect, path, err := backend.ParseURL(url)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errUsage, err)
	}
	if dialect != "sqlite" {
		return backend.RedactURL(url), nil
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if _, err := os.Stat(path); err == nil || create || !errors.Is(err, os.ErrNotExist) {
		return path, nil
	}
	where := "the data directory " + string(dir) + " (--data-dir, CKS_DATA_DIR, or the nearest " + datadir.Default + " here or above)"
	if url != dir.DatabaseURL() {
		where = "--database or CKS_DATABASE_URL"
	}
	return "", fmt.Errorf("no database at %s, named by %s: start the hub first (cks serve or cks dev creates it), "+
		"run the agent where its .cks is, or name the database; --create creates a new, empty one", path, where)
}

// parseAgent reads `cks agent KIND [flags] [-- COMMAND ARGS…]`: the kind's
// settings from the environment, flags winning.
func parseAgent(args []string, e env) (*agentRun, error) {
	kinds := strings.Join(agents.Kinds(), ", ")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil, fmt.Errorf("%w: agent needs a kind: one of %s", errUsage, kinds)
	}
	a := &agentRun{kind: args[0]}
	var err error
	if a.set, err = config.ParseAgent(a.kind, e.getenv); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	fs := flagSet("agent "+a.kind, e)
	a.sf.register(fs)
	a.set.RegisterFlags(fs)
	if a.kind == "pipeline" {
		// The pipeline agent runs the research orchestrator (ADR-007) for
		// its lifetime; its knobs come from CKS_PIPELINE_*, flags win.
		if a.ps, err = config.ParsePipeline(e.getenv); err != nil {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		a.ps.RegisterFlags(fs)
	}
	fs.BoolVar(&a.noFastStop, "no-fast-stop", false, "obey stop requests only at the liveness tick (ADR-016 baseline; for measurements)")
	fs.BoolVar(&a.create, "create", false, "create the SQLite database when it does not exist (by default a missing one is refused: "+
		"an agent on a new, empty database would wait there for tasks no hub gives it)")
	rest := args[1:]
	if i := slices.Index(rest, "--"); i >= 0 {
		rest, a.command = rest[:i], rest[i+1:]
	}
	pos, err := parse(fs, rest)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, fmt.Errorf("%w: agent %s takes no arguments before --, got %q", errUsage, a.kind, pos)
	}
	return a, nil
}

// check refuses settings the agent cannot run with, before it touches the
// store: each a usage error.
func (a *agentRun) check(e env) error {
	if err := a.set.Finish(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case a.kind == "exec" && (len(a.command) == 0 || len(a.set.Types) == 0):
		return fmt.Errorf("%w: agent exec needs --types T1,T2 and a command after --", errUsage)
	case a.kind == "exec":
		if err := (agents.ExecConfig{Command: a.command}).Check(); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		return nil
	case a.kind != "exec" && len(a.command) > 0:
		return fmt.Errorf("%w: only agent exec takes a command", errUsage)
	case a.kind != "pipeline":
		return nil
	}
	if err := a.ps.Validate(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if a.ps.Corpus != "" {
		// A missing corpus is a usage error.
		if st, err := os.Stat(a.ps.Corpus); err != nil || !st.IsDir() {
			return fmt.Errorf("%w: pipeline corpus %q (--corpus / %s): not an existing directory", errUsage, a.ps.Corpus, config.EnvPipelineCorpus)
		}
	}
	var err error
	if a.llm, err = config.ParseLLM(e.getenv); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return nil
}

// envModel is the model the environment names (CKS_LLM_*).
func envModel(e env) (llm.Model, error) {
	s, err := config.ParseLLM(e.getenv)
	if err != nil {
		return nil, err
	}
	return llm.New(s)
}

// work is what the agent does with the tasks it claims (nil: it claims
// none) and, for the pipeline, beside them.
func (a *agentRun) work(st *backend.Backend, model llm.Model, log *slog.Logger) (worker.Resolver, func(context.Context) error, error) {
	switch a.kind {
	case "exec":
		return agents.Exec(agents.ExecConfig{Command: a.command}), nil, nil
	case "critic":
		return agents.Critic(st.Objects, agents.CriticConfig{Model: model}), nil, nil
	case "enrichment":
		return agents.Enrichment(st.Objects), nil, nil
	case "fork_resolution":
		return agents.ForkResolver(st.Objects, agents.ForkConfig{Model: model}), nil, nil
	case "pipeline":
		host, _ := os.Hostname()
		orch, err := hub.NewPipeline(hub.PipelineConfig{Store: st.Objects, Changes: st.Changes, Settings: a.ps, LLM: a.llm,
			DefaultLease: st.Tasks.Settings().DefaultLease, Logger: log.With("component", "pipeline"),
			Name: fmt.Sprintf("pipeline@%s:%d", host, os.Getpid())})
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		return nil, orch.Run, nil
	}
	log.Info("no resolver for this kind yet: the agent reports liveness and obeys stop, and claims nothing", "process_kind", a.kind)
	return nil, nil, nil
}

// hurryOnSignals passes on the signals after the first (which began the
// drain: ctx), until done: the second closes interrupt, so the task in
// hand is interrupted and given back at once (agents.Options.Interrupt);
// the third exits the process at once.
func hurryOnSignals(ctx context.Context, done <-chan struct{}, interrupt chan<- struct{}, e env) {
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	for n := 2; ; n++ {
		select {
		case <-shutdown.Again():
		case <-done:
			return
		}
		if n == 2 {
			fmt.Fprintln(e.stderr, "cks agent: second signal during the drain: interrupting the task in hand and giving it back; "+
				"a third exits at once")
			close(interrupt)
			continue
		}
		fmt.Fprintln(e.stderr, "cks agent: third signal during the drain: exiting at once")
		os.Exit(1)
	}
}
