// Package peers runs cks's task ledger side by side with a peer job queue,
// River (github.com/riverqueue/river, pinned in this module's go.mod), on the
// same database in one interleaved run (issue 14, item 4): claim→complete
// throughput, enqueue→claim and enqueue→work-start latency on an idle
// system, a second table on SQLite, and per-task accounting from the
// server's own statistics (pg_stat_statements, pg_stat_wal,
// pg_stat_database) and /proc.
//
// It is a module of its own so that cks itself never depends on River. It
// uses only cks's public entry points: backend.Open, the services of the
// backend.Backend a worker calls (its ledger, Tasks), worker.Executor,
// bench.Ledger, and for the agents that work through a hub the api and
// mcpserver handlers, package client and the MCP SDK's client.
package peers

import (
	"time"
)

// The systems measured.
const (
	// SystemRiver is River with no-op workers.
	SystemRiver = "river"
	// SystemCks is cks claim→complete through backend.Backend with batch
	// claims (bench.Ledger, as `cksbench ledger` runs it).
	SystemCks = "cks"
	// SystemCksAgent is cks's agent path: claim one task straight to
	// RUNNING, then worker.Executor.Run (the heartbeat, Complete), as `cks
	// agent` does it.
	SystemCksAgent = "cks-agent"
	// SystemCksHTTP is cks's agents over the hub's HTTP executor API: each
	// agent claims straight into RUNNING through package client and runs
	// the task through worker.Executor over the same client (the
	// heartbeat, complete), with a token of its own, against an api server
	// on 127.0.0.1.
	SystemCksHTTP = "cks-http"
	// SystemCksMCP is cks's agents as MCP clients over streamable HTTP
	// (/mcp), calling the executor tools (claim_tasks with running,
	// touch_task, complete_task) in one session each.
	SystemCksMCP = "cks-mcp"
	// SystemSQLiteCeiling is the raw SQLite commit ceiling: single-row
	// INSERT transactions on one connection with cks's settings.
	SystemSQLiteCeiling = "sqlite-commit"
)

// Run is one measured run of one system: Jobs jobs enqueued, then worked
// until every one is completed exactly once.
type Run struct {
	Backend string `json:"backend"` // "postgres" or "sqlite"
	System  string `json:"system"`
	Workers int    `json:"workers"`
	Round   int    `json:"round"`
	Jobs    int    `json:"jobs"`
	// EnqueueSeconds is how long enqueueing the jobs took (not part of
	// JobsPerSecond).
	EnqueueSeconds float64 `json:"enqueue_s"`
	// WorkSeconds is from the first worker's start to the last job's
	// completion as the system reports it (River: the completion event,
	// sent after its completer's commit).
	WorkSeconds float64 `json:"work_s"`
	// JobsPerSecond is Jobs / WorkSeconds: claim→complete throughput.
	JobsPerSecond float64 `json:"jobs_per_s"`
	// Acct is what the run cost, enqueue and work together.
	Acct Accounting `json:"accounting"`
	// Retained is how many completed jobs (cks: tasks with their history)
	// the tables held before the run (Config.Retained); LoadSeconds is how
	// long loading them took (not part of the run's figures).
	Retained    int     `json:"retained,omitempty"`
	LoadSeconds float64 `json:"load_s,omitempty"`
}

// Label names the run's system and worker count for a table.
func (r Run) Label() string { return label(r.System, r.Workers) }

func label(system string, workers int) string {
	switch system {
	case SystemRiver:
		return "River, " + plural(workers, "worker")
	case SystemCks:
		return "cks claim→complete, " + plural(workers, "worker")
	case SystemCksAgent:
		return "cks agent path, " + plural(workers, "worker")
	case SystemCksHTTP:
		return "cks agents over HTTP, " + plural(workers, "agent")
	case SystemCksMCP:
		return "cks agents over MCP, " + plural(workers, "agent")
	case SystemSQLiteCeiling:
		return "raw SQLite single-row commits"
	}
	return system
}

// Accounting is the cost of a run, in totals; PerTask divides by the jobs.
// A zero Has* field means the figure could not be measured (no
// pg_stat_statements, a server on another machine, SQLite).
type Accounting struct {
	// HasStatements: Statements and StatementRows are from
	// pg_stat_statements.
	HasStatements bool `json:"has_statements"`
	// Statements is the number of top-level SQL statements executed,
	// BEGIN and COMMIT included (≈ round trips: each is one unless the
	// client pipelines).
	Statements    int64 `json:"statements"`
	StatementRows int64 `json:"statement_rows"`
	// HasServerStats: the pg_stat_database and pg_stat_wal figures.
	HasServerStats bool `json:"has_server_stats"`
	// Commits is the xact_commit delta of the database.
	Commits int64 `json:"commits"`
	// RowsWritten is tup_inserted + tup_updated + tup_deleted.
	RowsWritten int64 `json:"rows_written"`
	WALRecords  int64 `json:"wal_records"`
	WALBytes    int64 `json:"wal_bytes"`
	// WALSyncs is pg_stat_wal.wal_sync: WAL fsyncs, by backends at commit
	// and by the WAL writer.
	WALSyncs int64 `json:"wal_syncs"`
	// ClientCPU is this process's user+system CPU time during the run.
	ClientCPU time.Duration `json:"client_cpu_ns"`
	// HasServerCPU: ServerCPU is the CPU time of every process of the
	// database server (backends, WAL writer, checkpointer, autovacuum).
	HasServerCPU bool          `json:"has_server_cpu"`
	ServerCPU    time.Duration `json:"server_cpu_ns"`
	// WorkClientCPU and WorkServerCPU are the parts of ClientCPU and
	// ServerCPU spent in the work phase (after the last enqueue), the
	// phase jobs/s measures: on CPU-bound cores they set it.
	WorkClientCPU time.Duration `json:"work_client_cpu_ns,omitempty"`
	WorkServerCPU time.Duration `json:"work_server_cpu_ns,omitempty"`
	// Requests is the number of HTTP requests the hub served during the
	// run (the hub paths only: the agents' round trips to it).
	Requests int64 `json:"requests,omitempty"`
	// Top is the run's most frequent statements.
	Top []Statement `json:"top_statements,omitempty"`
}

// Statement is one normalised statement of pg_stat_statements.
type Statement struct {
	Query  string  `json:"query"`
	Calls  int64   `json:"calls"`
	Rows   int64   `json:"rows"`
	TimeMS float64 `json:"total_exec_ms"`
}

// add sums b into a (the Top lists are merged by query).
func (a Accounting) add(b Accounting) Accounting {
	a.HasStatements = a.HasStatements || b.HasStatements
	a.HasServerStats = a.HasServerStats || b.HasServerStats
	a.HasServerCPU = a.HasServerCPU || b.HasServerCPU
	a.Statements += b.Statements
	a.StatementRows += b.StatementRows
	a.Commits += b.Commits
	a.RowsWritten += b.RowsWritten
	a.WALRecords += b.WALRecords
	a.WALBytes += b.WALBytes
	a.WALSyncs += b.WALSyncs
	a.ClientCPU += b.ClientCPU
	a.ServerCPU += b.ServerCPU
	a.WorkClientCPU += b.WorkClientCPU
	a.WorkServerCPU += b.WorkServerCPU
	a.Requests += b.Requests
	a.Top = mergeTop(a.Top, b.Top)
	return a
}

// Latency is the idle-system latency of one system configuration.
type Latency struct {
	System string `json:"system"`
	// Setting says how the system waits for work: "default" or, for River,
	// "tuned" (FetchCooldown and FetchPollInterval of Config).
	Setting string `json:"setting"`
	Detail  string `json:"detail"`
	Workers int    `json:"workers"`
	Samples int    `json:"samples"`
	// Claim is from just before the enqueue call to the claim as the
	// system records it (cks claimed_at, River attempted_at: each the
	// clock reading at the start of the claiming transaction).
	ClaimP50 time.Duration `json:"enqueue_to_claim_p50_ns"`
	ClaimP99 time.Duration `json:"enqueue_to_claim_p99_ns"`
	ClaimMax time.Duration `json:"enqueue_to_claim_max_ns"`
	// Start is from just before the enqueue call to the moment the job's
	// work function runs (River Work, cks agent path the resolver, cks
	// claim loop the return of Claim).
	StartP50 time.Duration `json:"enqueue_to_start_p50_ns"`
	StartP99 time.Duration `json:"enqueue_to_start_p99_ns"`
	StartMax time.Duration `json:"enqueue_to_start_max_ns"`
}

// Label names the latency row's system and setting.
func (l Latency) Label() string {
	switch l.System {
	case SystemRiver:
		return "River, " + l.Setting + " (" + l.Detail + ")"
	case SystemCks:
		return "cks claim loop (" + l.Detail + ")"
	case SystemCksAgent:
		return "cks agent path (" + l.Detail + ")"
	}
	return l.System
}

// Report is everything one benchmark run measured.
type Report struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Host     Host      `json:"host"`
	Config   Config    `json:"config"`
	// Postgres and SQLite are every throughput run, in the order run.
	Postgres []Run `json:"postgres"`
	// Retained is the Postgres runs with Config.Retained completed jobs
	// loaded first: one run of each system at its largest worker count, in
	// the last round right after the same run without.
	Retained []Run     `json:"retained,omitempty"`
	SQLite   []Run     `json:"sqlite"`
	Latency  []Latency `json:"latency"`
}

// Host describes where the run took place.
type Host struct {
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model,omitempty"`
	MemoryGiB int    `json:"memory_gib,omitempty"`
	Go        string `json:"go"`
	// River is the River module's version in this build.
	River    string `json:"river,omitempty"`
	Postgres string `json:"postgres,omitempty"`
	// Settings are the server settings that decide durability and cost.
	Settings map[string]string `json:"postgres_settings,omitempty"`
	// OwnCluster: the server was a throwaway cluster this run started.
	OwnCluster bool `json:"own_cluster"`
	// LoadBefore and LoadAfter are /proc/loadavg's 1-minute figure: the
	// machine may be shared.
	LoadBefore float64 `json:"load_before"`
	LoadAfter  float64 `json:"load_after"`
}
