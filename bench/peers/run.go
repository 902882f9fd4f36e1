package peers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/cks-dev/cks/internal/backend"
)

// Config is one benchmark: which systems, how many rounds and jobs.
type Config struct {
	// Database is the Postgres URL the systems run on, each run in a schema
	// of its own that is dropped after it. Empty skips Postgres.
	Database string `json:"-"`
	// Rounds is how many times each system is run, interleaved: every
	// system once per round, in the same order (default 3).
	Rounds int `json:"rounds"`
	// Jobs is how many jobs each run enqueues and works (default 20,000).
	Jobs int `json:"jobs"`
	// RiverWorkers, CksWorkers and AgentWorkers are the worker counts of
	// the Postgres runs of River (default 100, 1000), cks claim→complete
	// (default 4, 16) and the cks agent path (default 4, 16).
	RiverWorkers []int `json:"river_workers"`
	CksWorkers   []int `json:"cks_workers"`
	AgentWorkers []int `json:"agent_workers"`
	// HTTPWorkers and MCPWorkers are the agent counts of the runs through
	// the hub: the HTTP executor API and the MCP tools (default 16, 64
	// each).
	HTTPWorkers []int `json:"http_agents"`
	MCPWorkers  []int `json:"mcp_agents"`
	// Retained, when positive, adds a run of each Postgres system at its
	// largest worker count to the last round, right after the same run
	// without, with this many completed jobs
	// loaded into its tables first (cks: tasks with their history rows;
	// River: river_job rows), so that a claim's walk past dead tuples and
	// the history's growth show (Report.Retained).
	Retained int `json:"retained,omitempty"`
	// Priorities is how many priority levels the jobs of both systems cycle
	// through, in the same order (default 1: all the same, River's default;
	// at most 4, River's range).
	Priorities int `json:"priorities"`
	// Batch is how many tasks one cks claim leases (default 10).
	Batch int `json:"cks_batch"`
	// RiverInsertBatch is how many jobs one River InsertManyFast inserts
	// (default 1,000).
	RiverInsertBatch int `json:"river_insert_batch"`
	// Lease is the cks agent path's lease; its heartbeat is a third of it
	// (default 3 minutes, as `cks agent`: heartbeat 60 s).
	Lease time.Duration `json:"cks_lease_ns"`
	// Touches is how many times each task of the agents over HTTP and MCP
	// renews its lease (touch_task) before it completes, the heartbeats of
	// a task longer than a third of the lease (default 0: a no-op task ends
	// before its first heartbeat, as on the other paths).
	Touches int `json:"touches,omitempty"`

	// LatencySamples is how many jobs each latency measurement times
	// (default 200; 0 after defaults is never: use NoLatency).
	LatencySamples int  `json:"latency_samples"`
	NoLatency      bool `json:"no_latency"`
	// LatencyGap: each latency job is enqueued 10 ms plus a uniform random
	// time below LatencyGap after the previous one started (default 100 ms).
	LatencyGap time.Duration `json:"latency_gap_ns"`
	// LatencyRiverWorkers and LatencyCksWorkers are the idle workers
	// waiting for the latency jobs (default 100 and 4).
	LatencyRiverWorkers int `json:"latency_river_workers"`
	LatencyCksWorkers   int `json:"latency_cks_workers"`
	// CksPoll is the cks claim loops' poll interval when no notification
	// comes (default 5 s, `cks agent`'s).
	CksPoll time.Duration `json:"cks_poll_ns"`
	// TunedCooldown and TunedPoll are River's tuned FetchCooldown and
	// FetchPollInterval (default 1 ms each, River's minimum).
	TunedCooldown time.Duration `json:"river_tuned_fetch_cooldown_ns"`
	TunedPoll     time.Duration `json:"river_tuned_fetch_poll_ns"`
	// RiverDefaultFetch runs River's throughput runs at its default fetch
	// settings instead of the tuned ones. The default FetchCooldown (100 ms
	// between fetches) caps a queue at MaxWorkers jobs per 100 ms, so the
	// tuned settings are River's best and the comparison's default.
	RiverDefaultFetch bool `json:"river_default_fetch"`

	// SQLite runs the second table: cks on its embedded SQLite against
	// River's riversqlite driver and the raw commit ceiling, in files
	// under SQLiteDir (default os.TempDir()).
	SQLite             bool   `json:"sqlite"`
	SQLiteDir          string `json:"-"`
	SQLiteRiverWorkers []int  `json:"sqlite_river_workers"`
	SQLiteCksWorkers   []int  `json:"sqlite_cks_workers"`
	SQLiteAgentWorkers []int  `json:"sqlite_agent_workers"`

	// NoCheckpoint leaves out the CHECKPOINT before each Postgres run (on
	// a server shared with other work).
	NoCheckpoint bool `json:"no_checkpoint"`

	// Timeout bounds one run (default 15 minutes).
	Timeout time.Duration `json:"-"`
	// Progress, when set, receives progress lines.
	Progress func(line string) `json:"-"`
}

// riverThroughputSettings are the River client settings of a throughput
// run: the tuned fetch settings unless RiverDefaultFetch.
func (c Config) riverThroughputSettings(workers int) riverSettings {
	s := riverSettings{workers: workers}
	if !c.RiverDefaultFetch {
		s.cooldown, s.poll = c.TunedCooldown, c.TunedPoll
	}
	return s
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defList := func(v *[]int, d ...int) { // nil: the default; empty: none
		if *v == nil {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Rounds, 3)
	def(&c.Jobs, 20_000)
	defList(&c.RiverWorkers, 100, 1000)
	defList(&c.CksWorkers, 4, 16)
	defList(&c.AgentWorkers, 4, 16)
	defList(&c.HTTPWorkers, 16, 64)
	defList(&c.MCPWorkers, 16, 64)
	def(&c.Batch, 10)
	def(&c.Priorities, 1)
	def(&c.RiverInsertBatch, 1000)
	defDur(&c.Lease, 3*time.Minute)
	def(&c.LatencySamples, 200)
	defDur(&c.LatencyGap, 100*time.Millisecond)
	def(&c.LatencyRiverWorkers, 100)
	def(&c.LatencyCksWorkers, 4)
	defDur(&c.CksPoll, 5*time.Second)
	defDur(&c.TunedCooldown, time.Millisecond)
	defDur(&c.TunedPoll, time.Millisecond)
	defList(&c.SQLiteRiverWorkers, 100, 1000)
	defList(&c.SQLiteCksWorkers, 1, 4)
	defList(&c.SQLiteAgentWorkers, 1, 4)
	defDur(&c.Timeout, 15*time.Minute)
	if c.Progress == nil {
		c.Progress = func(string) {}
	}
	return c
}

// contender is one system at one worker count.
type contender struct {
	system  string
	workers int
}

// systemWorkers is one system's worker counts.
type systemWorkers struct {
	system  string
	workers []int
}

func contenders(systems ...systemWorkers) []contender {
	var out []contender
	for _, s := range systems {
		for _, w := range s.workers {
			out = append(out, contender{s.system, w})
		}
	}
	return out
}

// postgresSystems are the Postgres runs' systems, in the order of a round.
func (c Config) postgresSystems() []systemWorkers {
	return []systemWorkers{{SystemRiver, c.RiverWorkers}, {SystemCks, c.CksWorkers}, {SystemCksAgent, c.AgentWorkers},
		{SystemCksHTTP, c.HTTPWorkers}, {SystemCksMCP, c.MCPWorkers}}
}

// retainedContenders are the runs with retained jobs: each system once, at
// its largest worker count.
func (c Config) retainedContenders() []contender {
	var out []contender
	for _, s := range c.postgresSystems() {
		if len(s.workers) > 0 {
			out = append(out, contender{s.system, slices.Max(s.workers)})
		}
	}
	return out
}

// Bench runs the benchmark cfg describes: the Postgres rounds, the latency
// measurements, then the SQLite rounds.
func Bench(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	rep := Report{Started: time.Now().UTC(), Config: cfg, Host: Host{OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUs: runtime.NumCPU(), CPUModel: cpuModel(), MemoryGiB: memoryGiB(), Go: runtime.Version(), River: riverVersion(), LoadBefore: loadAverage()}}
	if cfg.Database != "" {
		m, err := openMeter(ctx, cfg.Database)
		if err != nil {
			return rep, err
		}
		m.checkpoint = !cfg.NoCheckpoint
		defer m.close(context.WithoutCancel(ctx))
		rep.Host.Postgres = m.version(ctx)
		rep.Host.Settings = m.settings(ctx)
		if !m.pgss {
			cfg.Progress("pg_stat_statements is not loaded (shared_preload_libraries): no statement counts")
		}
		cs := contenders(cfg.postgresSystems()...)
		retain := cfg.retainedContenders()
		for round := 1; round <= cfg.Rounds; round++ {
			for _, c := range cs {
				r, err := runPostgres(ctx, m, cfg, c, round, 0)
				if err != nil {
					return rep, fmt.Errorf("postgres round %d, %s: %w", round, label(c.system, c.workers), err)
				}
				cfg.Progress(fmt.Sprintf("postgres round %d/%d: %s: %s jobs/s", round, cfg.Rounds, r.Label(), thousands(int64(r.JobsPerSecond))))
				rep.Postgres = append(rep.Postgres, r)
				if cfg.Retained <= 0 || round != cfg.Rounds || !slices.Contains(retain, c) {
					continue
				}
				// The run with retained jobs follows its run without in
				// the last round, so that the two see the same machine.
				r, err = runPostgres(ctx, m, cfg, c, round, cfg.Retained)
				if err != nil {
					return rep, fmt.Errorf("postgres, %s completed retained, %s: %w", thousands(int64(cfg.Retained)), label(c.system, c.workers), err)
				}
				cfg.Progress(fmt.Sprintf("postgres, %s retained (loaded in %.0f s): %s: %s jobs/s", thousands(int64(cfg.Retained)),
					r.LoadSeconds, r.Label(), thousands(int64(r.JobsPerSecond))))
				rep.Retained = append(rep.Retained, r)
			}
		}
		if !cfg.NoLatency {
			for _, v := range latencyVariants(cfg) {
				l, err := runLatency(ctx, m, cfg, v)
				if err != nil {
					return rep, fmt.Errorf("latency, %s: %w", v.Label(), err)
				}
				cfg.Progress(fmt.Sprintf("latency: %s: enqueue→claim p50 %s p99 %s, enqueue→start p50 %s p99 %s", l.Label(),
					ms(l.ClaimP50), ms(l.ClaimP99), ms(l.StartP50), ms(l.StartP99)))
				rep.Latency = append(rep.Latency, l)
			}
		}
	}
	if cfg.SQLite {
		dir, err := os.MkdirTemp(cfg.SQLiteDir, "cks-peers-sqlite.")
		if err != nil {
			return rep, fmt.Errorf("peers: sqlite directory: %w", err)
		}
		defer os.RemoveAll(dir)
		cs := append([]contender{{SystemSQLiteCeiling, 1}}, contenders(systemWorkers{SystemRiver, cfg.SQLiteRiverWorkers},
			systemWorkers{SystemCks, cfg.SQLiteCksWorkers}, systemWorkers{SystemCksAgent, cfg.SQLiteAgentWorkers})...)
		for round := 1; round <= cfg.Rounds; round++ {
			for _, c := range cs {
				r, err := runSQLite(ctx, dir, cfg, c, round)
				if err != nil {
					return rep, fmt.Errorf("sqlite round %d, %s: %w", round, label(c.system, c.workers), err)
				}
				cfg.Progress(fmt.Sprintf("sqlite round %d/%d: %s: %s jobs/s", round, cfg.Rounds, r.Label(), thousands(int64(r.JobsPerSecond))))
				rep.SQLite = append(rep.SQLite, r)
			}
		}
	}
	rep.Finished = time.Now().UTC()
	rep.Host.LoadAfter = loadAverage()
	return rep, nil
}

// progressFor returns the progress callback of one run: a line when a phase
// ends, and at most every 5 s meanwhile.
func progressFor(cfg Config, prefix string) func(phase string, done, total int) {
	var last time.Time
	lastPhase, lastDone := "", -1
	return func(phase string, done, total int) {
		switch {
		case phase == lastPhase && done == lastDone:
			return // said already
		case phase == lastPhase && done < total && time.Since(last) < 5*time.Second:
			return
		}
		last, lastPhase, lastDone = time.Now(), phase, done
		cfg.Progress(fmt.Sprintf("%s: %s %s/%s", prefix, phase, thousands(int64(done)), thousands(int64(total))))
	}
}

// schemaFor names the schema of one run.
func schemaFor(kind string, c contender, round int) string {
	return fmt.Sprintf("peers_%s_%s_%d_%d", kind, strings.ReplaceAll(c.system, "-", "_"), round, c.workers)
}

// freshSchema (re)creates schema and returns the URLs of the setup and of
// the measured connections (application_name peers-setup and app), and a
// function that drops the schema.
func freshSchema(ctx context.Context, m *meter, db, schema, app string) (setup, run string, drop func(), err error) {
	if err := m.exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
		return "", "", nil, fmt.Errorf("peers: drop schema: %w", err)
	}
	if err := m.exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", "", nil, fmt.Errorf("peers: create schema: %w", err)
	}
	drop = func() { m.exec(context.WithoutCancel(ctx), "DROP SCHEMA IF EXISTS "+schema+" CASCADE") } //nolint:errcheck // best effort
	setup = withParams(db, map[string]string{"search_path": schema, "application_name": "peers-setup"})
	run = withParams(db, map[string]string{"search_path": schema, "application_name": app})
	return setup, run, drop, nil
}

// createTables makes system's tables in the schema of setupURL on
// connections of their own, closed before the measurement starts (a
// backend hands over its statistics as it exits).
func createTables(ctx context.Context, m *meter, system, setupURL, schema string) error {
	if system == SystemRiver {
		pool, err := pgxpool.New(ctx, setupURL)
		if err != nil {
			return fmt.Errorf("peers: connect: %w", err)
		}
		err = migrateRiver(ctx, riverpgxv5.New(pool), schema)
		pool.Close()
		if err != nil {
			return err
		}
	} else {
		st, err := backend.Open(ctx, setupURL)
		if err != nil {
			return fmt.Errorf("peers: open cks: %w", err)
		}
		st.Close()
	}
	return m.drained(ctx, "peers-setup")
}

// runPostgres is one throughput run on Postgres, with its accounting;
// retained completed jobs are loaded into the tables first.
func runPostgres(ctx context.Context, m *meter, cfg Config, c contender, round, retained int) (Run, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	r := Run{Backend: "postgres", System: c.system, Workers: c.workers, Round: round, Jobs: cfg.Jobs, Retained: retained}
	kind := "pg"
	if retained > 0 {
		kind = "pgret"
	}
	schema := schemaFor(kind, c, round)
	app := "peers-" + c.system
	setupURL, runURL, drop, err := freshSchema(ctx, m, cfg.Database, schema, app)
	if err != nil {
		return r, err
	}
	defer drop()
	if err := createTables(ctx, m, c.system, setupURL, schema); err != nil {
		return r, err
	}
	prefix := fmt.Sprintf("postgres round %d/%d: %s", round, cfg.Rounds, r.Label())
	if retained > 0 {
		prefix = fmt.Sprintf("postgres, %s retained: %s", thousands(int64(retained)), r.Label())
		cfg.Progress(prefix + ": loading the retained jobs")
		t0 := time.Now()
		var err error
		if c.system == SystemRiver {
			err = retainRiver(ctx, m, schema, retained)
		} else {
			err = retainCks(ctx, m, setupURL, schema, retained)
		}
		if err == nil {
			err = m.drained(ctx, "peers-setup")
		}
		if err != nil {
			return r, err
		}
		r.LoadSeconds = time.Since(t0).Seconds()
		cfg.Progress(fmt.Sprintf("%s: loaded in %.1f s", prefix, r.LoadSeconds))
	}
	var (
		before, cpuEnd snapshot
		// workStart is the CPU at the end of the enqueue phase: the work
		// phase's CPU, which alone decides jobs/s, is cpuEnd less it.
		workStart snapshot
		marked    bool
		enq, work time.Duration
		closeFn   func()
		// The hub's requests during the run (a hub path's).
		requests, requestsBefore int64
	)
	// start takes the starting counters once the measured connections
	// exist (opening them is not part of the run).
	start := func() error {
		if err := m.prepare(ctx); err != nil {
			return err
		}
		var err error
		before, err = m.read(ctx)
		return err
	}
	said := progressFor(cfg, prefix)
	progress := func(phase string, done, total int) {
		if phase == "enqueue" && done == total && !marked {
			workStart, marked = m.cpu(), true
		}
		said(phase, done, total)
	}
	switch c.system {
	case SystemRiver:
		pool, err := pgxpool.New(ctx, runURL)
		if err != nil {
			return r, fmt.Errorf("peers: connect: %w", err)
		}
		closeFn = pool.Close
		client, err := newRiverClient(riverpgxv5.New(pool), schema, cfg.riverThroughputSettings(c.workers))
		if err == nil {
			err = start()
		}
		if err == nil {
			enq, work, err = riverThroughput(ctx, client, cfg.Jobs, cfg.Priorities, cfg.RiverInsertBatch, progress)
		}
		cpuEnd = m.cpu()
		if err == nil {
			err = expectCount(ctx, m, "SELECT count(*) FROM "+schema+".river_job WHERE state = 'completed' AND kind = $1", cfg.Jobs, noopArgs{}.Kind())
		}
		if err != nil {
			pool.Close()
			return r, err
		}
	default:
		st, err := backend.Open(ctx, runURL)
		if err != nil {
			return r, fmt.Errorf("peers: open cks: %w", err)
		}
		closeFn = func() { st.Close() }
		var ra *remoteAgents
		if c.system == SystemCksHTTP || c.system == SystemCksMCP {
			// The hub, the agents' tokens and sessions are set up before
			// the run, as a fleet's would be.
			ra, err = connectAgents(ctx, st, c.system, c.workers)
		}
		if err == nil {
			err = start()
		}
		if ra != nil {
			requestsBefore = ra.hub.requests.Load()
		}
		if err == nil {
			a := agentSettings{lease: cfg.Lease, touches: cfg.Touches}
			switch c.system {
			case SystemCks:
				enq, work, err = cksThroughput(ctx, st, cfg.Jobs, cfg.Priorities, c.workers, cfg.Batch, progress)
			case SystemCksAgent:
				enq, work, err = agentThroughput(ctx, st, cfg.Jobs, cfg.Priorities, c.workers, a, progress)
			default:
				enq, work, err = remoteThroughput(ctx, st, ra, cfg.Jobs, cfg.Priorities, a, progress)
			}
		}
		cpuEnd = m.cpu()
		if ra != nil {
			requests = ra.hub.requests.Load() - requestsBefore
			err = errors.Join(err, ra.close(ctx))
		}
		if err == nil {
			err = expectCompleted(ctx, st, cfg.Jobs)
		}
		if err != nil {
			st.Close()
			return r, err
		}
	}
	closeFn()
	if err := m.drained(ctx, app); err != nil {
		return r, err
	}
	after, err := m.read(ctx)
	if err != nil {
		return r, err
	}
	if r.Acct, err = m.account(ctx, before, cpuEnd, after); err != nil {
		return r, err
	}
	if marked {
		r.Acct.WorkClientCPU = cpuEnd.client - workStart.client
		if r.Acct.HasServerCPU {
			r.Acct.WorkServerCPU = cpuEnd.server - workStart.server
		}
	}
	r.Acct.Requests = requests
	r.EnqueueSeconds, r.WorkSeconds = enq.Seconds(), work.Seconds()
	r.JobsPerSecond = float64(cfg.Jobs) / work.Seconds()
	return r, nil
}

func expectCount(ctx context.Context, m *meter, sql string, want int, args ...any) error {
	n, err := m.count(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("peers: count completed jobs: %w", err)
	}
	if n != int64(want) {
		return fmt.Errorf("peers: %d jobs completed, want %d", n, want)
	}
	return nil
}

func expectCompleted(ctx context.Context, st *backend.Backend, want int) error {
	n, err := cksCompleted(ctx, st)
	if err != nil {
		return fmt.Errorf("peers: count completed tasks: %w", err)
	}
	if n != want {
		return fmt.Errorf("peers: %d tasks COMPLETED, want %d", n, want)
	}
	return nil
}

// latencyVariants are the latency measurements: River at its default and
// tuned fetch settings, cks's claim loop and agent path.
func latencyVariants(cfg Config) []Latency {
	return []Latency{
		{System: SystemRiver, Setting: "default", Workers: cfg.LatencyRiverWorkers,
			Detail: "FetchCooldown 100ms, FetchPollInterval 1s"},
		{System: SystemRiver, Setting: "tuned", Workers: cfg.LatencyRiverWorkers,
			Detail: fmt.Sprintf("FetchCooldown %s, FetchPollInterval %s", cfg.TunedCooldown, cfg.TunedPoll)},
		{System: SystemCks, Setting: "default", Workers: cfg.LatencyCksWorkers,
			Detail: fmt.Sprintf("tasks_ready notification, poll %s", cfg.CksPoll)},
		{System: SystemCksAgent, Setting: "default", Workers: cfg.LatencyCksWorkers,
			Detail: fmt.Sprintf("tasks_ready notification, poll %s", cfg.CksPoll)},
	}
}

// runLatency measures one latency variant on an idle system in a fresh
// schema.
func runLatency(ctx context.Context, m *meter, cfg Config, l Latency) (Latency, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	schema := fmt.Sprintf("peers_lat_%s_%s", strings.ReplaceAll(l.System, "-", "_"), l.Setting)
	setupURL, runURL, drop, err := freshSchema(ctx, m, cfg.Database, schema, "peers-"+l.System)
	if err != nil {
		return l, err
	}
	defer drop()
	if err := createTables(ctx, m, l.System, setupURL, schema); err != nil {
		return l, err
	}
	p := pacing{samples: cfg.LatencySamples, warmup: 5, gap: cfg.LatencyGap}
	cfg.Progress(fmt.Sprintf("latency: %s: %d samples", l.Label(), p.samples))
	var samples []sample
	if l.System == SystemRiver {
		pool, err := pgxpool.New(ctx, runURL)
		if err != nil {
			return l, fmt.Errorf("peers: connect: %w", err)
		}
		defer pool.Close()
		s := riverSettings{workers: l.Workers}
		if l.Setting == "tuned" {
			s.cooldown, s.poll = cfg.TunedCooldown, cfg.TunedPoll
		}
		samples, err = riverLatency(ctx, riverpgxv5.New(pool), schema, s, p)
		if err != nil {
			return l, err
		}
	} else {
		st, err := backend.Open(ctx, runURL)
		if err != nil {
			return l, fmt.Errorf("peers: open cks: %w", err)
		}
		defer st.Close()
		samples, err = cksLatency(ctx, st, l.System == SystemCksAgent, l.Workers, cfg.CksPoll, agentSettings{lease: cfg.Lease}, p)
		if err != nil {
			return l, err
		}
	}
	return summarize(l, samples), nil
}

// runSQLite is one throughput run on SQLite, each in a fresh file. Only the
// client's CPU is accounted (SQLite runs inside this process).
func runSQLite(ctx context.Context, dir string, cfg Config, c contender, round int) (r Run, err error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	r = Run{Backend: "sqlite", System: c.system, Workers: c.workers, Round: round, Jobs: cfg.Jobs}
	path := filepath.Join(dir, schemaFor("sqlite", c, round)+".db")
	defer func() {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(path + suffix)
		}
	}()
	progress := progressFor(cfg, fmt.Sprintf("sqlite round %d/%d: %s", round, cfg.Rounds, r.Label()))
	var enq, work time.Duration
	var cpu time.Duration
	switch c.system {
	case SystemSQLiteCeiling:
		cpu = processCPU()
		work, err = sqliteCeiling(ctx, path, cfg.Jobs, progress)
		cpu = processCPU() - cpu
	case SystemRiver:
		db, drv, err2 := openRiverSQLite(ctx, path)
		if err2 != nil {
			return r, err2
		}
		defer db.Close()
		client, err2 := newRiverClient(drv, "", cfg.riverThroughputSettings(c.workers))
		if err2 != nil {
			return r, err2
		}
		cpu = processCPU()
		enq, work, err = riverThroughput(ctx, client, cfg.Jobs, cfg.Priorities, cfg.RiverInsertBatch, progress)
		cpu = processCPU() - cpu
		if err == nil {
			var n int
			if err = db.QueryRowContext(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&n); err == nil && n != cfg.Jobs {
				err = fmt.Errorf("peers: %d jobs completed, want %d", n, cfg.Jobs)
			}
		}
	default:
		st, err2 := backend.Open(ctx, "sqlite:"+path)
		if err2 != nil {
			return r, fmt.Errorf("peers: open cks: %w", err2)
		}
		defer st.Close()
		cpu = processCPU()
		if c.system == SystemCks {
			enq, work, err = cksThroughput(ctx, st, cfg.Jobs, cfg.Priorities, c.workers, cfg.Batch, progress)
		} else {
			enq, work, err = agentThroughput(ctx, st, cfg.Jobs, cfg.Priorities, c.workers, agentSettings{lease: cfg.Lease}, progress)
		}
		cpu = processCPU() - cpu
		if err == nil {
			err = expectCompleted(ctx, st, cfg.Jobs)
		}
	}
	if err != nil {
		return r, err
	}
	if work <= 0 {
		return r, errors.New("peers: the run took no time")
	}
	r.EnqueueSeconds, r.WorkSeconds = enq.Seconds(), work.Seconds()
	r.JobsPerSecond = float64(cfg.Jobs) / work.Seconds()
	r.Acct = Accounting{ClientCPU: cpu}
	return r, nil
}

// riverVersion is the version of River this binary was built with.
func riverVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/riverqueue/river" {
			return d.Version
		}
	}
	return ""
}

// ms formats d in milliseconds for progress lines and tables.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f ms", f)
	case f >= 10:
		return fmt.Sprintf("%.1f ms", f)
	}
	return fmt.Sprintf("%.2f ms", f)
}
