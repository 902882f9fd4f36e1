// Command peers runs cks and River side by side (package peers) and writes
// the tables and charts into docs/benchmarks.md and docs/peers-*.svg.
//
//	cd bench && go run ./cmd/peers [flags]
//
// Without --database it starts a throwaway, durable PostgreSQL cluster of
// its own (fsync, synchronous_commit and full_page_writes on,
// pg_stat_statements loaded) and removes it at the end.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cks-dev/cks/bench/peers"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	database := fs.String("database", "", "postgres://… URL to run on (each run in a schema of its own, dropped after it); default: a throwaway cluster started for the run")
	pgBin := fs.String("pg-bin", "/usr/lib/postgresql/15/bin", "PostgreSQL server binaries for the throwaway cluster")
	pgDir := fs.String("pg-dir", "", "directory for the throwaway cluster (default the temp directory; it must be a real disk, not tmpfs)")
	durable := fs.Bool("durable", true, "throwaway cluster with fsync, synchronous_commit and full_page_writes on (false: all off)")
	noPostgres := fs.Bool("no-postgres", false, "skip Postgres (throughput and latency)")
	rounds := fs.Int("rounds", 3, "interleaved rounds: every system runs once per round")
	jobs := fs.Int("jobs", 20_000, "jobs per run")
	riverWorkers := fs.String("river-workers", "100,1000", "River worker counts on Postgres")
	cksWorkers := fs.String("cks-workers", "4,16", "cks claim→complete worker counts on Postgres")
	agentWorkers := fs.String("agent-workers", "4,16", "cks agent-path worker counts on Postgres")
	httpAgents := fs.String("http-agents", "16,64", "agent counts of cks through the hub's HTTP executor API (package client) on Postgres")
	mcpAgents := fs.String("mcp-agents", "16,64", "agent counts of cks through the hub's MCP tools (streamable HTTP) on Postgres")
	touches := fs.Int("touches", 0, "lease renewals (touch_task) each task of the agents over HTTP and MCP sends before it completes, as heartbeats of a longer task would")
	retained := fs.Int("retained", 0, "after the rounds, run each Postgres system once more (at its largest worker count) with this many completed jobs loaded first (cks: tasks with their history; River: river_job rows), e.g. 1000000")
	priorities := fs.Int("priorities", 1, "priority levels the jobs of both systems cycle through, in the same order (1 to 4, River's range; 1: all the same)")
	batch := fs.Int("batch", 10, "tasks per cks claim (claim→complete)")
	insertBatch := fs.Int("river-insert-batch", 1000, "jobs per River InsertManyFast")
	lease := fs.Duration("lease", 3*time.Minute, "cks agent-path lease (heartbeat: a third of it)")
	samples := fs.Int("latency-samples", 200, "jobs timed per latency measurement")
	noLatency := fs.Bool("no-latency", false, "skip the latency measurements")
	gap := fs.Duration("latency-gap", 100*time.Millisecond, "latency jobs are 10ms plus a random pause below this apart")
	tunedCooldown := fs.Duration("river-tuned-cooldown", time.Millisecond, "River's tuned FetchCooldown")
	tunedPoll := fs.Duration("river-tuned-poll", time.Millisecond, "River's tuned FetchPollInterval")
	defaultFetch := fs.Bool("river-default-fetch", false, "River's throughput runs at its default fetch settings (a 100ms FetchCooldown caps it at 10 jobs/s per worker) instead of the tuned ones")
	withSQLite := fs.Bool("sqlite", true, "run the SQLite table (cks, River's riversqlite, the raw commit ceiling)")
	sqliteDir := fs.String("sqlite-dir", "", "directory for the SQLite files (default the temp directory)")
	sqliteRiver := fs.String("sqlite-river-workers", "100,1000", "River worker counts on SQLite")
	sqliteCks := fs.String("sqlite-cks-workers", "1,4", "cks claim→complete worker counts on SQLite")
	sqliteAgent := fs.String("sqlite-agent-workers", "1,4", "cks agent-path worker counts on SQLite")
	timeout := fs.Duration("timeout", 15*time.Minute, "bound on one run")
	docs := fs.String("docs", "auto", `directory of benchmarks.md to write the section and charts into; "auto" finds the repository's docs/, "none" writes nothing`)
	asJSON := fs.Bool("json", false, "print the raw figures as JSON instead of the Markdown tables")
	render := fs.String("render", "", "measure nothing: read the figures from this --json output and write the docs from them")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./cmd/peers [flags]   (from bench)\n\n"+
			"Runs River and cks side by side on one PostgreSQL (interleaved rounds), measures idle latency,\n"+
			"and compares the embedded SQLite ledgers; prints the tables and writes them into docs/benchmarks.md.\n\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), "\nAn empty worker list (--http-agents \"\") leaves that system out.\n")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg := peers.Config{Rounds: *rounds, Jobs: *jobs, Priorities: *priorities, Batch: *batch, RiverInsertBatch: *insertBatch, Lease: *lease,
		LatencySamples: *samples, NoLatency: *noLatency, LatencyGap: *gap, TunedCooldown: *tunedCooldown, TunedPoll: *tunedPoll,
		RiverDefaultFetch: *defaultFetch, Retained: *retained, Touches: *touches,
		SQLite: *withSQLite, SQLiteDir: *sqliteDir, Timeout: *timeout}
	for _, l := range []struct {
		flag string
		val  string
		dst  *[]int
	}{
		{"river-workers", *riverWorkers, &cfg.RiverWorkers}, {"cks-workers", *cksWorkers, &cfg.CksWorkers},
		{"agent-workers", *agentWorkers, &cfg.AgentWorkers}, {"http-agents", *httpAgents, &cfg.HTTPWorkers},
		{"mcp-agents", *mcpAgents, &cfg.MCPWorkers}, {"sqlite-river-workers", *sqliteRiver, &cfg.SQLiteRiverWorkers},
		{"sqlite-cks-workers", *sqliteCks, &cfg.SQLiteCksWorkers}, {"sqlite-agent-workers", *sqliteAgent, &cfg.SQLiteAgentWorkers},
	} {
		if *l.dst, err = counts(l.val); err != nil {
			return fmt.Errorf("--%s: %w", l.flag, err)
		}
	}
	if *rounds < 1 || *jobs < 1 || *batch < 1 || *insertBatch < 1 || *samples < 1 {
		return errors.New("--rounds, --jobs, --batch, --river-insert-batch and --latency-samples must be positive")
	}
	if *touches < 0 || *touches > 100 {
		return fmt.Errorf("--touches: expected 0 to 100 renewals per task, got %d", *touches)
	}
	if *retained < 0 {
		return fmt.Errorf("--retained: expected a count of jobs, 0 for none, got %d", *retained)
	}
	if *priorities < 1 || *priorities > 4 {
		return fmt.Errorf("--priorities: expected 1 to 4 (River's priorities), got %d", *priorities)
	}
	docsDir := *docs
	switch docsDir {
	case "none":
		docsDir = ""
	case "auto":
		if docsDir, err = findDocs(); err != nil {
			return err
		}
	}

	if *render != "" {
		return renderFile(*render, docsDir, stdout)
	}
	start := time.Now()
	cfg.Progress = func(line string) {
		fmt.Fprintf(stderr, "peers %6s  %s\n", time.Since(start).Round(time.Second), line)
	}
	own := false
	if !*noPostgres {
		cfg.Database = *database
		if cfg.Database == "" {
			c, err := peers.StartCluster(ctx, peers.ClusterConfig{Bin: *pgBin, Parent: *pgDir, NotDurable: !*durable})
			if err != nil {
				return err
			}
			defer func() {
				sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				err = errors.Join(err, c.Stop(sctx))
			}()
			cfg.Database, own = c.URL, true
			cfg.Progress("started a throwaway PostgreSQL cluster: " + strings.Join(c.Settings, " "))
		}
	}
	rep, err := peers.Bench(ctx, cfg)
	if err != nil {
		return err
	}
	rep.Host.OwnCluster = own
	if docsDir != "" {
		if err := peers.WriteDocs(docsDir, rep); err != nil {
			return err
		}
		cfg.Progress("wrote " + filepath.Join(docsDir, "benchmarks.md") + " and its charts")
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	_, err = io.WriteString(stdout, peers.Summary(rep)+"\n"+peers.Markdown(rep))
	return err
}

// renderFile writes the docs (when docsDir is set) and prints the tables of
// a report saved with --json.
func renderFile(path, docsDir string, stdout io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rep peers.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if docsDir != "" {
		if err := peers.WriteDocs(docsDir, rep); err != nil {
			return err
		}
	}
	_, err = io.WriteString(stdout, peers.Summary(rep)+"\n"+peers.Markdown(rep))
	return err
}

// counts parses a comma-separated list of worker counts.
func counts(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return []int{}, nil // "": that system is not run
	}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 10_000 {
			return nil, fmt.Errorf("expected comma-separated counts from 1 to 10000, got %q", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// findDocs finds the repository's docs directory: the nearest
// docs/benchmarks.md at or above the working directory.
func findDocs() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "docs", "benchmarks.md")); err == nil {
			return filepath.Join(dir, "docs"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New(`no docs/benchmarks.md at or above the working directory; pass --docs DIR or --docs none`)
		}
		dir = parent
	}
}
