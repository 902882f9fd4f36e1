package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks/bench"
	"github.com/cks-dev/cks/bench/internal/proc"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/corpus"
	"github.com/cks-dev/cks/internal/config"
	driverpostgres "github.com/cks-dev/cks/internal/driver/postgres"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/runtime/telemetry"
	"github.com/cks-dev/cks/internal/service/llm"
)

// benchmarks are the benchmarks of `cksbench NAME`, in the order help
// lists them (docs/benchmarks.md); set by init, as their help (flagSet)
// reads the table.
var benchmarks []benchmark

func init() {
	benchmarks = []benchmark{
		{name: "ledger", run: cmdBenchLedger, summary: "ledger throughput: enqueue and work tasks with each number of workers, on a scratch store"},
		{name: "abort", run: cmdBenchAbort, summary: "stop and update latency of running tasks, with the abort confirmed"},
		{name: "delayed", run: cmdBenchDelayed, summary: "delayed-task lateness: how late an idle agent claims tasks after their run_after"},
		{name: "liveness", run: cmdBenchLiveness, summary: "the liveness store: heartbeats, status reads and list_processes over a history of rows"},
		{name: "stop", run: cmdBenchStop, summary: "remote process stop: agent processes started and stopped, by notification and at the tick"},
		{name: "pipeline", run: cmdBenchPipeline, summary: "the research pipeline: questions answered per second with each number of workers"},
		{name: "knowledge", run: cmdBenchKnowledge, summary: "merges of large objects with long histories, and the knowledge sweepers' passes"},
	}
}

// cmdBenchLedger is `cksbench ledger`: enqueue and work tasks with each
// number of workers, on a scratch store.
func cmdBenchLedger(ctx context.Context, args []string, e env) error {
	fs := flagSet("bench ledger", e)
	database := fs.String("database", "", "a postgres://… `URL` to benchmark Postgres (a scratch schema is created and dropped); default a temporary SQLite file")
	tasks := fs.Int("tasks", 100_000, "tasks to enqueue and work per run")
	workers := fs.String("workers", "1,4,16", "comma-separated worker counts `N,N`, one run each")
	batch := fs.Int("batch", 10, "tasks leased per claim")
	concurrent := fs.Bool("concurrent", false, "complete the tasks of a claim each on its own goroutine (as River runs the jobs of a fetch), not one after another")
	priorities := fs.Int("priorities", 1, "priority levels the tasks cycle through (task i gets priority i mod N; 1: all the same)")
	enqueueBatch := fs.Int("enqueue-batch", bench.DefaultEnqueueBatch, "tasks stored per EnqueueMany call (1: one Enqueue per task)")
	keys := fs.Int("keys", 0, "give the tasks `N` concurrency keys k:0…k:N-1 in turn (0: none)")
	maxRunning := fs.Int("max-running", 0, "with --keys, cap each key at `N` running tasks with a limit (0: no limit)")
	observe := fs.Bool("observe", false, "give the ledger a hub's task metrics (ledger.Observer), told of every claim and attempt end, as a hub's ledger is")
	traceTo := fs.String("trace", "", "with --observe, also export the ledger's spans (create_task, attempt) to this OTLP/HTTP traces `URL`, as a hub with tracing on does (docs/tracing.md)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the runs (every worker count, enqueue and work) to this `FILE`, for go tool pprof")
	memProfile := fs.String("memprofile", "", "write the allocations of the runs (sampled, since the start: go tool pprof -sample_index=alloc_space) to this `FILE` when they end")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	var ws []int
	for _, s := range strings.Split(*workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 256 {
			return fmt.Errorf("%w: --workers: expected comma-separated counts from 1 to 256, got %q", errUsage, *workers)
		}
		ws = append(ws, n)
	}
	if *tasks < 1 || *batch < 1 || *enqueueBatch < 1 || *priorities < 1 {
		return fmt.Errorf("%w: --tasks, --batch, --enqueue-batch and --priorities must be positive", errUsage)
	}
	if *keys < 0 || *maxRunning < 0 || (*maxRunning > 0 && *keys == 0) {
		return fmt.Errorf("%w: --keys and --max-running must not be negative, and --max-running needs --keys", errUsage)
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	var results []bench.LedgerResult
	var backendName string
	for _, w := range ws {
		url, cleanup, err := scratchStore(ctx, *database)
		if err != nil {
			return err
		}
		st, err := backend.Open(ctx, url)
		if err != nil {
			cleanup()
			return err
		}
		backendName = st.Dialect()
		stopTracing := func(context.Context) error { return nil }
		if *observe {
			obs := hub.TaskObserver()
			if *traceTo != "" {
				if obs, stopTracing, err = telemetry.Start(ctx, config.Tracing{Enabled: true, Endpoint: *traceTo, ServiceName: "cksbench"},
					obs, nil); err != nil {
					st.Close()
					cleanup()
					return err
				}
			}
			st.Tasks.ObserveWith(obs)
		}
		fmt.Fprintf(e.stderr, "bench ledger: %s, %d tasks, %d workers, batch %d, observed %v, traced %v\n", backendName, *tasks, w, *batch,
			*observe, *observe && *traceTo != "")
		r, err := bench.Ledger(ctx, st.Tasks, bench.LedgerConfig{Tasks: *tasks, Workers: w, Batch: *batch,
			EnqueueBatch: *enqueueBatch, Priorities: *priorities, Concurrent: *concurrent, Keys: *keys, MaxRunning: *maxRunning,
			Progress: progressLine(e)})
		serr := stopTracing(ctx) // the spans still queued are exported
		st.Close()
		cleanup()
		if err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("--trace: %w", serr)
		}
		results = append(results, r)
	}
	if *memProfile != "" {
		if err := writeProfile("allocs", *memProfile); err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
	}
	if *asJSON {
		return printJSON(e.stdout, map[string]any{"backend": backendName, "results": results})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "backend\tworkers\ttasks\tenqueue/s\tcomplete/s\tclaim p50\tclaim p99\t\n")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.0f\t%s\t%s\t\n", backendName, r.Workers, r.Tasks, r.EnqueueRate, r.CompleteRate,
			r.ClaimP50.Round(time.Microsecond), r.ClaimP99.Round(time.Microsecond))
	}
	return tw.Flush()
}

// startCPUProfile starts a CPU profile written to path; stop ends it and
// closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeProfile writes the runtime profile name to path.
func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cmdBenchAbort measures stop → abort-confirmed and update-of-a-running-task
// latency (bench.Abort) with the executor and the operator on separate
// handles of one scratch store.
func cmdBenchAbort(ctx context.Context, args []string, e env) error {
	fs := flagSet("bench abort", e)
	database := fs.String("database", "", "a postgres://… `URL` to benchmark Postgres (a scratch schema is created and dropped); default a temporary SQLite file")
	rounds := fs.Int("rounds", 200, "stops and updates to measure")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if *rounds < 1 {
		return fmt.Errorf("%w: --rounds must be positive", errUsage)
	}
	agent, op, cleanup, err := openScratchPair(ctx, *database)
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Fprintf(e.stderr, "bench abort: %s, %d rounds\n", op.Dialect(), *rounds)
	r, err := bench.Abort(ctx, agent, op, bench.AbortConfig{Rounds: *rounds,
		Progress: progressLine(e)})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, map[string]any{"backend": op.Dialect(), "result": r})
	}
	return printLatencies(e.stdout, op.Dialect(), "operation", []latencyRow{
		{"stop → abort confirmed", r.StopP50, r.StopP99},
		{"update running (restart) → confirmed", r.UpdateP50, r.UpdateP99},
		{"update running (priority, live)", r.LiveP50, r.LiveP99},
	})
}

// cmdBenchDelayed is `cksbench delayed`: delayed tasks, one due at a time,
// claimed by an idle agent's claim loop on a second handle of the store.
func cmdBenchDelayed(ctx context.Context, args []string, e env) error {
	fs := flagSet("bench delayed", e)
	database := fs.String("database", "", "a postgres://… `URL` to benchmark Postgres (a scratch schema is created and dropped); default a temporary SQLite file")
	tasks := fs.Int("tasks", 200, "delayed tasks to measure")
	spacing := fs.Duration("spacing", 50*time.Millisecond, "time between two tasks' run_after")
	lead := fs.Duration("lead", 2*time.Second, "how far ahead the first task is due")
	poll := fs.Duration("poll-interval", 5*time.Second, "the agent's poll interval: the longest one claim waits in the ledger")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if *tasks < 1 || *spacing <= 0 || *lead <= 0 || *poll <= 0 {
		return fmt.Errorf("%w: --tasks, --spacing, --lead and --poll-interval must be positive", errUsage)
	}
	agent, op, cleanup, err := openScratchPair(ctx, *database)
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Fprintf(e.stderr, "bench delayed: %s, %d tasks %s apart\n", op.Dialect(), *tasks, *spacing)
	r, err := bench.Delayed(ctx, agent, op, bench.DelayedConfig{Tasks: *tasks, Spacing: *spacing, Lead: *lead, PollInterval: *poll})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, map[string]any{"backend": op.Dialect(), "result": r})
	}
	return printLatencies(e.stdout, op.Dialect(), "delayed task", []latencyRow{
		{"run_after → claimed (lateness)", r.LatenessP50, r.LatenessP99},
	})
}

// latencyRow is one line of a p50/p99 table.
type latencyRow struct {
	name     string
	p50, p99 time.Duration
}

// printLatencies prints rows as a table: backend, what (the name column's
// title), p50, p99.
func printLatencies(w io.Writer, backend, what string, rows []latencyRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "backend\t%s\tp50\tp99\t\n", what)
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", backend, row.name, row.p50.Round(time.Microsecond), row.p99.Round(time.Microsecond))
	}
	return tw.Flush()
}

// progressLine returns a progress callback that rewrites one stderr line
// "label done/total" and ends it when done reaches total.
func progressLine(e env) func(label string, done, total int) {
	return func(label string, done, total int) {
		fmt.Fprintf(e.stderr, "\r  %-10s %7d/%d", label, done, total)
		if done == total {
			fmt.Fprintln(e.stderr)
		}
	}
}

// openScratch opens a store on a fresh scratch database (scratchStore);
// the returned function closes it and drops the database.
func openScratch(ctx context.Context, database string) (*backend.Backend, func(), error) {
	url, cleanup, err := scratchStore(ctx, database)
	if err != nil {
		return nil, nil, err
	}
	st, err := backend.Open(ctx, url)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return st, func() { st.Close(); cleanup() }, nil
}

// openScratchPair opens two handles on one fresh scratch database, as an
// agent's process and an operator's hub would hold: the returned function
// closes both and drops the database.
func openScratchPair(ctx context.Context, database string) (agent, op *backend.Backend, cleanup func(), err error) {
	url, drop, err := scratchStore(ctx, database)
	if err != nil {
		return nil, nil, nil, err
	}
	if agent, err = backend.Open(ctx, url); err != nil {
		drop()
		return nil, nil, nil, err
	}
	if op, err = backend.Open(ctx, url); err != nil {
		agent.Close()
		drop()
		return nil, nil, nil, err
	}
	return agent, op, func() { op.Close(); agent.Close(); drop() }, nil
}

// scratchStore returns the URL of an empty store for one run and its cleanup.
func scratchStore(ctx context.Context, database string) (string, func(), error) {
	if strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://") {
		url, drop, err := driverpostgres.ScratchSchema(ctx, database)
		if err != nil {
			return "", nil, err
		}
		return url, func() { drop(context.Background()) }, nil
	}
	if database != "" {
		return "", nil, fmt.Errorf("%w: bench --database takes a postgres:// URL; SQLite runs use a temporary file", errUsage)
	}
	dir, err := os.MkdirTemp("", "cks-bench-")
	if err != nil {
		return "", nil, err
	}
	return "sqlite:" + filepath.Join(dir, "bench.db"), func() { os.RemoveAll(dir) }, nil
}

// cmdBenchLiveness measures heartbeat, read-back, process_status and
// list_processes over a history of instance rows (bench.Liveness).
func cmdBenchLiveness(ctx context.Context, args []string, e env) error {
	fs := flagSet("bench liveness", e)
	database := fs.String("database", "", "a postgres://… `URL` to benchmark Postgres (a scratch schema is created and dropped); default a temporary SQLite file")
	history := fs.Int("history", 100_000, "historical instance rows written first")
	samples := fs.Int("samples", 500, "timed calls of each kind (a tenth for list_processes)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if *history < 1 || *samples < 1 {
		return fmt.Errorf("%w: --history and --samples must be positive", errUsage)
	}
	url, cleanup, err := scratchStore(ctx, *database)
	if err != nil {
		return err
	}
	defer cleanup()
	st, err := backend.Open(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(e.stderr, "bench liveness: %s, %d historical rows\n", st.Dialect(), *history)
	r, err := bench.Liveness(ctx, st.Liveness, bench.LivenessConfig{History: *history, Samples: *samples,
		Progress: progressLine(e)})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, map[string]any{"backend": st.Dialect(), "result": r})
	}
	return printLatencies(e.stdout, st.Dialect(), "call", []latencyRow{
		{"heartbeat (upsert)", r.HeartbeatP50, r.HeartbeatP99},
		{"read-back (own row)", r.ReadBackP50, r.ReadBackP99},
		{"process_status", r.StatusP50, r.StatusP99},
		{fmt.Sprintf("list_processes (%d rows)", r.History+1), r.ListP50, r.ListP99},
	})
}

// cmdBenchStop measures remote stop latency (bench.ProcessStop): it starts
// idle `cks agent pipeline` processes of a cks binary (--cks, or one built
// from this checkout) and times each from the stop request to the
// process's exit, with the notification fast path and with the liveness
// tick only.
func cmdBenchStop(ctx context.Context, args []string, e env) error {
	fs := flagSet("bench stop", e)
	database := fs.String("database", "", "a postgres://… `URL` to benchmark Postgres (a scratch schema is created and dropped); default a temporary SQLite file")
	rounds := fs.Int("rounds", 20, "processes started and stopped per path")
	interval := fs.Duration("liveness-interval", time.Second, "the agents' liveness interval (the tick-only path waits up to one)")
	cksBin := fs.String("cks", "", "the cks `BINARY` whose `cks agent pipeline` processes are stopped; default: cks built from this checkout (go build, run in the bench module)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if *rounds < 1 || *interval <= 0 {
		return fmt.Errorf("%w: --rounds and --liveness-interval must be positive", errUsage)
	}
	url, cleanup, err := scratchStore(ctx, *database)
	if err != nil {
		return err
	}
	defer cleanup()
	st, err := backend.Open(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	bin := *cksBin
	if bin == "" {
		dir, err := os.MkdirTemp("", "cksbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(e.stderr, "bench stop: building cks")
		if bin, err = proc.BuildCKS(ctx, dir, e.stderr); err != nil {
			return err
		}
	}
	results := map[string]bench.StopResult{}
	paths := []string{"fast path", "tick only"}
	for _, path := range paths {
		fmt.Fprintf(e.stderr, "bench stop: %s, %s, %d rounds, liveness interval %s\n", st.Dialect(), path, *rounds, *interval)
		launch := func(ctx context.Context) (string, func() error, error) {
			cmdArgs := []string{"agent", "pipeline", "--database", url, "--liveness-interval", interval.String()}
			if path == "tick only" {
				cmdArgs = append(cmdArgs, "--no-fast-stop")
			}
			return launchAgent(ctx, bin, cmdArgs)
		}
		r, err := bench.ProcessStop(ctx, st.Liveness, bench.StopConfig{Rounds: *rounds, Launch: launch, Settle: *interval,
			Progress: func(done, total int) { progressLine(e)(path, done, total) }})
		if err != nil {
			return err
		}
		results[path] = r
	}
	if *asJSON {
		return printJSON(e.stdout, map[string]any{"backend": st.Dialect(), "liveness_interval_ns": *interval, "results": results})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "backend\tpath\trounds\tp50\tp99\tmax\t\n")
	for _, path := range paths {
		r := results[path]
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t\n", st.Dialect(), path, r.Rounds,
			r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.Max.Round(time.Millisecond))
	}
	return tw.Flush()
}

// launchAgent starts `bin args…` and returns, once the agent has logged its
// start, its instance id and a function waiting for its exit. The process is
// killed if ctx ends first.
func launchAgent(ctx context.Context, bin string, args []string) (string, func() error, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	ids := make(chan string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if i := strings.Index(line, "instance_id="); !sent && strings.Contains(line, "agent started") && i >= 0 {
				ids <- strings.Fields(line[i+len("instance_id="):])[0]
				sent = true
			}
		}
		if !sent {
			close(ids)
		}
	}()
	id, ok := <-ids
	if !ok {
		<-drained
		return "", nil, fmt.Errorf("agent exited before it started: %v", cmd.Wait())
	}
	return id, func() error { <-drained; return cmd.Wait() }, nil
}

// cmdBenchPipeline runs questions through the research pipeline with the
// offline model and the shipped corpus (bench.Pipeline): for each worker
// count, once woken by notifications and once by the poll alone.
func cmdBenchPipeline(ctx context.Context, args []string, e env) error {
	fs := flagSet("bench pipeline", e)
	database := fs.String("database", "", "a postgres://… `URL` to benchmark Postgres (a scratch schema is created and dropped); default a temporary SQLite file")
	questions := fs.Int("questions", 1000, "questions per run")
	workers := fs.String("workers", "1,4", "comma-separated workers per step `N,N`, one run each")
	poll := fs.Duration("poll", time.Second, "the fallback poll interval of the poll-only runs")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	var ws []int
	for _, s := range strings.Split(*workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 64 {
			return fmt.Errorf("%w: --workers: expected comma-separated counts from 1 to 64, got %q", errUsage, *workers)
		}
		ws = append(ws, n)
	}
	if *questions < 1 || *poll <= 0 {
		return fmt.Errorf("%w: --questions and --poll must be positive", errUsage)
	}
	c, err := llm.LoadCorpusFS(corpus.FS, ".")
	if err != nil {
		return err
	}
	var (
		results     []bench.PipelineResult
		backendName string
	)
	for _, w := range ws {
		for _, notify := range []bool{true, false} {
			url, cleanup, err := scratchStore(ctx, *database)
			if err != nil {
				return err
			}
			st, err := backend.Open(ctx, url)
			if err != nil {
				cleanup()
				return err
			}
			backendName = st.Dialect()
			mode := "notify"
			if !notify {
				mode = "poll " + poll.String()
			}
			fmt.Fprintf(e.stderr, "bench pipeline: %s, %d questions, %d workers per step, %s\n", backendName, *questions, w, mode)
			r, err := bench.Pipeline(ctx, st, bench.PipelineConfig{Questions: *questions, Question: bench.ResearchQuestion,
				Corpus: c, Workers: w, NoNotify: !notify, Poll: *poll,
				Progress: func(done, total int) { progressLine(e)("resolved", done, total) }})
			st.Close()
			cleanup()
			if err != nil {
				return err
			}
			results = append(results, r)
		}
	}
	if *asJSON {
		return printJSON(e.stdout, map[string]any{"backend": backendName, "results": results})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "backend\tworkers\twake\tquestions\tquestions/s\tcoord p50\tcoord p99\twake p50\twake p99\t\n")
	for _, r := range results {
		wake := "notify"
		if !r.Notify {
			wake = "poll " + poll.String()
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t\n", backendName, r.Workers, wake, r.Questions, r.ObjectsRate,
			r.CoordP50.Round(time.Microsecond), r.CoordP99.Round(time.Microsecond), r.WakeP50.Round(time.Microsecond), r.WakeP99.Round(time.Microsecond))
	}
	return tw.Flush()
}

// cmdBenchKnowledge measures fork merges on a large object with a long
// history (bench.Merge) and one pass of each knowledge sweeper over many
// objects (bench.Sweep), each on its own scratch store.
func cmdBenchKnowledge(ctx context.Context, args []string, e env) error {
	fs := flagSet("bench knowledge", e)
	database := fs.String("database", "", "a postgres://… `URL` to benchmark Postgres (a scratch schema is created and dropped); default a temporary SQLite file")
	fields := fs.Int("fields", 1000, "top-level fields of the merged object")
	history := fs.Int("history", 1000, "versions written before the merges")
	merges := fs.Int("merges", 50, "forks made and merged")
	objects := fs.Int("objects", 100_000, "objects the sweepers pass over")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if *fields < 1 || *history < 1 || *merges < 1 || *objects < 1 {
		return fmt.Errorf("%w: --fields, --history, --merges and --objects must be positive", errUsage)
	}
	progress := progressLine(e)
	st, done, err := openScratch(ctx, *database)
	if err != nil {
		return err
	}
	name := st.Dialect()
	fmt.Fprintf(e.stderr, "bench knowledge: %s, merges: %d fields, %d versions, %d merges\n", name, *fields, *history, *merges)
	m, err := bench.Merge(ctx, st, bench.MergeConfig{Fields: *fields, History: *history, Merges: *merges, Progress: progress})
	done()
	if err != nil {
		return err
	}
	if st, done, err = openScratch(ctx, *database); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "bench knowledge: %s, sweepers over %d objects\n", name, *objects)
	sw, err := bench.Sweep(ctx, st, bench.SweepConfig{Objects: *objects, Progress: progress})
	done()
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, map[string]any{"backend": name, "merge": m, "sweep": sw})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "backend\tmeasure\tvalue\t\n")
	fmt.Fprintf(tw, "%s\tmerges/s (%d fields, %d versions)\t%.1f\t\n", name, m.Fields, m.History, m.Rate)
	fmt.Fprintf(tw, "%s\tmerge p50 / p99\t%s / %s\t\n", name, m.MergeP50.Round(time.Microsecond), m.MergeP99.Round(time.Microsecond))
	fmt.Fprintf(tw, "%s\tLCA + three-way merge p50\t%s\t\n", name, m.AlgoP50.Round(time.Microsecond))
	for _, id := range []string{"fork_detection", "contradiction", "inference_staleness", "graph_health"} {
		fmt.Fprintf(tw, "%s\t%s pass over %d objects (found %d)\t%s\t\n", name, id, sw.Objects, sw.Found[id], sw.Pass[id].Round(time.Millisecond))
	}
	return tw.Flush()
}
