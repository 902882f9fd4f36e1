package schema

import (
	"strings"

	"github.com/cks-dev/cks"
)

// Tables returns the current schema, in creation order (a table comes after
// the tables it references, as Postgres needs).
func Tables() []Table {
	return []Table{
		agentLiveness(),
		principals(),
		grants(),
		sessions(),
		outboxTasks(),
		taskDeps(),
		taskEvents(),
		taskEvidence(),
		taskDecisions(),
		taskOutput(),
		taskAborts(),
		sweeperControl(),
		sweeperPasses(),
		pausedTypes(),
		limits(),
		keyStarts(),
		usage(),
		taskSpend(),
		keySpend(),
		leaders(),
		schedules(),
		objects(),
		objectVersions(),
		edges(),
		transitionLog(),
		changes(),
	}
}

// Column shorthands: the shapes that repeat.
func pk(name string) Column { return Column{Name: name, Type: ID} }

func textKey(name string) Column { return Column{Name: name, Type: Text, PrimaryKey: true} }

func text(name string) Column { return Column{Name: name, Type: Text, NotNull: true} }

func textOr(name string) Column {
	return Column{Name: name, Type: Text, NotNull: true, Default: EmptyText}
}

func intOr(name string, d string) Column {
	return Column{Name: name, Type: Int, NotNull: true, Default: Lit(d)}
}

func reqInt(name string) Column { return Column{Name: name, Type: Int, NotNull: true} }

func at(name string) Column { return Column{Name: name, Type: Time, NotNull: true} }

func ref(name, target string) Column {
	return Column{Name: name, Type: BigInt, NotNull: true, References: target}
}

func agentLiveness() Table {
	return Table{
		Name: "cks_agent_liveness",
		Columns: []Column{
			textKey("instance_id"),
			text("process_kind"),
			text("hostname"),
			reqInt("pid"),
			{Name: "liveness_interval_s", Type: Float, NotNull: true},
			at("started_at"),
			at("last_heartbeat_at"),
			{Name: "current_task_id", Type: BigInt},
			{Name: "current_task_type", Type: Text},
			// ADR-016: NULL = no stop requested, 'stop_requested' = pending.
			{Name: "desired_state", Type: Text},
			// When the instance exited gracefully; NULL while it runs (or
			// since it died without saying so: the TTL rule tells).
			// Rows written before the column existed, whose exit wrote a
			// heartbeat backdated to the epoch, are backfilled.
			{Name: "exited_at", Type: Time},
			// The task types the instance claims, a JSON array of strings
			// (NULL: none, or written before the column existed).
			{Name: "task_types", Type: Text},
			// Until when the TTL rule reads the instance alive
			// (liveness.AliveUntil, written with every heartbeat); NULL once
			// it exited. Derived, so that the alive instances are a range of
			// an index, not a scan of the history (issue 26).
			{Name: "alive_until", Type: Time},
			// The principal whose report_process calls write the row (issue
			// 41): only it may write the row again. NULL for a process on
			// the database, which writes its row itself.
			{Name: "reported_by", Type: Text},
		},
		Indexes: []Index{
			{Name: "idx_agent_liveness_kind", Keys: []Key{K("process_kind"), K("last_heartbeat_at")}},
			// process_status: the newest instance of a kind, in LivenessLatest's order.
			{Name: "idx_agent_liveness_latest", Keys: []Key{K("process_kind"), {Column: "started_at", Desc: true},
				{Column: "last_heartbeat_at", Desc: true}, {Column: "instance_id", ByteOrder: true}}},
			// The pages of the history, in LivenessPage's order, and the
			// retention sweeper's old rows (started before its cutoff).
			{Name: "idx_agent_liveness_started", Keys: []Key{{Column: "started_at", Desc: true}, {Column: "instance_id", ByteOrder: true}}},
			// The alive instances (LivenessAlive): only rows that may be.
			{Name: "idx_agent_liveness_alive", Keys: []Key{K("alive_until")}, Where: "alive_until IS NOT NULL"},
		},
	}
}

func principals() Table {
	return Table{
		Name: "cks_principals",
		Columns: []Column{
			textKey("principal_id"),
			text("name"),
			{Name: "token_hash", Type: Text, NotNull: true, Unique: true},
			at("created_at"),
			// A task-scoped credential is bound to the lease it was issued
			// with: the task and the SHA-256 of that lease's token (NULL for
			// an unbound principal). It is valid only while that lease is the
			// task's current one.
			{Name: "task_id", Type: BigInt},
			{Name: "lease_token_hash", Type: Text},
		},
		Indexes: []Index{
			{Name: "idx_principals_lease", Keys: []Key{K("task_id")}, Where: "task_id IS NOT NULL"},
		},
	}
}

func grants() Table {
	return Table{
		Name: "cks_grants",
		Columns: []Column{
			{Name: "principal_id", Type: Text, NotNull: true, References: "cks_principals(principal_id)", OnDeleteCascade: true},
			text("resource"),
			text("permission"),
		},
		PrimaryKey: []string{"principal_id", "resource", "permission"},
	}
}

// sessions are the studio's sign-ins (issue 22): a browser holds a random
// secret in its cookie, the table only its SHA-256 hash, bound to the
// principal whose token signed in (a revoked principal's sessions go with
// it) and refused from expires_at on.
func sessions() Table {
	return Table{
		Name: "cks_sessions",
		Columns: []Column{
			textKey("session_id"),
			{Name: "secret_hash", Type: Text, NotNull: true, Unique: true},
			{Name: "principal_id", Type: Text, NotNull: true, References: "cks_principals(principal_id)", OnDeleteCascade: true},
			at("created_at"),
			at("expires_at"),
		},
		Indexes: []Index{
			// The cascade of a principal's delete, and the cleanup of
			// expired sessions.
			{Name: "idx_sessions_principal", Keys: []Key{K("principal_id")}},
			{Name: "idx_sessions_expires", Keys: []Key{K("expires_at")}},
			// The pages of list_sessions, in SessionPage's order.
			{Name: "idx_sessions_created", Keys: []Key{{Column: "created_at", Desc: true}, {Column: "session_id", ByteOrder: true}}},
		},
	}
}

func outboxTasks() Table {
	return Table{
		Name: "cks_outbox_tasks",
		Columns: []Column{
			pk("task_id"),
			text("type"),
			textOr("title"),
			textOr("description"),
			textOr("acceptance_criteria"),
			{Name: "payload", Type: JSON, NotNull: true, Default: EmptyObject},
			text("state"),
			intOr("priority", "0"),
			intOr("attempts", "0"),
			intOr("max_attempts", "3"),
			intOr("restarts", "0"),
			intOr("revision", "1"),
			{Name: "parent_id", Type: BigInt, References: "cks_outbox_tasks(task_id)"},
			textOr("dedupe_key"),
			textOr("created_by"),
			textOr("claimed_by"),
			{Name: "claimed_at", Type: Time},
			// driver.HashLeaseToken of the current lease's token; '' when none.
			// The plain token is never stored.
			textOr("lease_token_hash"),
			{Name: "lease_expires_at", Type: Time},
			{Name: "lease_renewed_at", Type: Time},
			{Name: "lease_ms", Type: BigInt, NotNull: true, Default: Zero},
			// driver.AgentTokenHash of the agent credential a claim issued
			// with the current lease ('' when none): bound to
			// lease_token_hash, so it stops matching when the lease ends.
			textOr("agent_token_hash"),
			{Name: "run_after", Type: Time},
			textOr("result"),
			textOr("last_error"),
			textOr("question"),
			textOr("answer"),
			textOr("review_note"),
			at("created_at"),
			at("updated_at"),
			// Set at enqueue and by every transition; nullable only because
			// ADD COLUMN on a filled table needs it. Older rows get updated_at
			// (the best estimate there is) when the column is added.
			{Name: "state_changed_at", Type: Time},
			// Operators' free-form JSON object (owner, links, …).
			{Name: "metadata", Type: JSON, NotNull: true, Default: EmptyObject},
			// The longest an attempt may run, from its claim (claimed_at):
			// the lease reaper ends one past it (ledger's TimeOutAttempts);
			// 0, none. The deadline is computed, not stored, so the claim
			// writes nothing for it.
			{Name: "attempt_timeout_ms", Type: BigInt, NotNull: true, Default: Zero},
			// When a task not completed by then is cancelled (the lease
			// reaper's ledger.ExpireTasks); NULL, never.
			{Name: "expires_at", Type: Time},
			// The task's concurrency keys (issue 42), a JSON array of
			// strings; '' for none, so that the claims tell a task without
			// keys by a comparison, not by parsing.
			{Name: "concurrency_keys", Type: Text, NotNull: true, Default: EmptyText},
			// The W3C traceparent the task was created under (issue 43
			// item 6), such as 00-<trace id>-<span id>-01; '' for none. The
			// hub's spans of the task (its create, its attempts) are of
			// that trace.
			{Name: "traceparent", Type: Text, NotNull: true, Default: EmptyText},
		},
		// A task's row gets a new version at its claim and at its end:
		// room on its page for them.
		FillFactor: 70,
		// Every index here is rewritten by every state change (a new row
		// version, since state is a key), so each earns its cost: the
		// ones a sweeper alone reads are partial, holding only the states
		// it reads (issue 14; docs/benchmarks.md has what each costs).
		// SQLite's queries take their states as a JSON list, which its
		// planner cannot match against an index's WHERE: it has the
		// reaper's index on the expiry alone, and none for the stale stops.
		Indexes: []Index{
			// The stale-stop report and the "stopped longer than" listing:
			// the STOPPED tasks by when they stopped.
			{Name: "idx_outbox_tasks_stopped", Keys: []Key{K("state_changed_at")},
				Where: "state = " + literal(string(cks.TaskStopped)), Only: Postgres},
			// Claims of one type (and of several): the OPEN tasks of a type
			// in claim order. Only the OPEN tasks, so that no move but a
			// claim touches it. The claims imply its WHERE: they name 'OPEN'
			// beside the ledger's state, so that the plan Postgres caches and
			// the statement SQLite keeps prepared can use it without looking
			// at a binding.
			{Name: "idx_outbox_tasks_claim_type", Keys: []Key{K("state"), K("type"), {Column: "priority", Desc: true}, K("created_at"), K("task_id")},
				Where: "state = " + literal(string(cks.TaskOpen))},
			// Postgres's listings and counts by state, in id order, for the
			// states a task settles in: off the path of a task that runs
			// (the dependency sweeper's WAITING tasks, a review queue, the
			// failed and STOPPED ones) and COMPLETED, its end. The claim and
			// the start of a run do not write it; the completion adds the
			// task's one entry (the board's counts read COMPLETED, most of
			// the table, from it alone: an index-only scan, not the table).
			// The running states have their indexes above and below (OPEN,
			// and the leased ones).
			{Name: "idx_outbox_tasks_settled", Keys: []Key{K("state"), K("task_id")},
				Where: "state NOT IN " + literalList(running[:]), Only: Postgres},
			// SQLite's listings and counts of one state but OPEN (the board's
			// STOPPED and NEEDS_INPUT lists, the stale-stop count) and its
			// counts by state: the queries that read it name its WHERE, which
			// SQLite's planner matches only literally. Every move but an
			// enqueue writes it (OPEN tasks are the claim indexes').
			{Name: "idx_outbox_tasks_state", Keys: []Key{K("state")},
				Where: "state <> " + literal(string(cks.TaskOpen)), Only: SQLite},
			// Claims of any type (or of several): the OPEN tasks in claim order.
			{Name: "idx_outbox_tasks_claim_open", Keys: []Key{K("state"), {Column: "priority", Desc: true}, K("created_at"), K("task_id")},
				Where: "state = " + literal(string(cks.TaskOpen))},
			// The lease reaper: the leases of the states it reclaims
			// (ledger's ReclaimExpired), by expiry.
			{Name: "idx_outbox_tasks_leased", Keys: []Key{K("lease_expires_at")},
				Where: "state IN " + literalList(LeasedStates[:]), Only: Postgres},
			// SQLite's planner cannot match the reaper's state list (JSON)
			// against a WHERE on state, but it can match its
			// lease_expires_at <= ? against IS NOT NULL — and only a leased
			// task has an expiry (revoke clears it), so the index holds the
			// leases alone: a claim adds an entry, the end of the lease
			// takes it out, no other move touches it.
			{Name: "idx_outbox_tasks_lease_expires", Keys: []Key{K("lease_expires_at")},
				Where: "lease_expires_at IS NOT NULL", Only: SQLite},
			// The lease reaper's attempt deadlines (ledger's
			// TimeOutAttempts): the leased tasks that have an attempt
			// timeout, by id. A claim of such a task adds its entry, the
			// end of the lease takes it out; a task without a timeout is
			// never in it.
			{Name: "idx_outbox_tasks_timed", Keys: []Key{K("task_id")},
				Where: "attempt_timeout_ms > 0 AND lease_expires_at IS NOT NULL"},
			// The lease reaper's expiries (ledger's ExpireTasks): the
			// tasks that expire and have not ended, by expiry. The end of
			// such a task takes its entry out; a task that never expires
			// is never in it. The query names the WHERE as written.
			{Name: "idx_outbox_tasks_expiring", Keys: []Key{K("expires_at"), K("task_id")},
				Where: "expires_at IS NOT NULL AND state NOT IN " + literalList(TerminalStates[:])},
			// list_tasks by updated_at, either way (the board's "recently
			// changed"): a page is an index range from its cursor, not a
			// sort of the table (issue 38.9: 1.8 s over 50,000 tasks on
			// SQLite). Every move and lease renewal rewrites its entry.
			{Name: "idx_outbox_tasks_updated", Keys: []Key{K("updated_at"), K("task_id")}},
			// When the next delayed OPEN task becomes due (TaskNextDue, the
			// waiting room's timer): the OPEN tasks with a run_after alone,
			// by it, rather than every OPEN task at each read of the room.
			// A claim clears run_after, so it leaves; a task that never had
			// one is never in it.
			{Name: "idx_outbox_tasks_due", Keys: []Key{K("run_after")},
				Where: "state = " + literal(string(cks.TaskOpen)) + " AND run_after IS NOT NULL"},
			// The keys held now (TaskKeysHeld, the keyed claim's count of
			// each key's CLAIMED and RUNNING tasks): the claim of a task
			// with keys adds its entry, the end of the attempt takes it
			// out; a task without keys is never in it.
			{Name: "idx_outbox_tasks_keys_held", Keys: []Key{K("task_id")},
				Where: "concurrency_keys <> '' AND state IN " + literalList(HoldingStates[:])},
			// A dedupe lookup in every state.
			{Name: "idx_outbox_tasks_dedupe_all", Keys: []Key{K("dedupe_key")}, Where: "dedupe_key <> ''"},
			// The children of a task: the retention sweeper deletes no task
			// that has one (and the foreign key's check of a delete reads
			// it). Only the tasks that have a parent.
			{Name: "idx_outbox_tasks_parent_of", Keys: []Key{K("parent_id")}, Where: "parent_id IS NOT NULL"},
			// One live task per dedupe key.
			{Name: "idx_outbox_tasks_dedupe", Unique: true, Keys: []Key{K("dedupe_key")},
				Where: "dedupe_key <> '' AND state NOT IN " + literalList(TerminalStates[:])},
		},
		RetiredIndexes: []RetiredIndex{
			// No query read tasks by parent, and no task was deleted (what
			// an index on a referencing column is for); the retention
			// sweeper's has the partial idx_outbox_tasks_parent_of.
			{Name: "idx_outbox_tasks_parent"},
			// Replaced by the partial idx_outbox_tasks_stopped and
			// idx_outbox_tasks_leased (Postgres), idx_outbox_tasks_lease_expires
			// (SQLite). SQLite's listings and counts by state (the stale-stop
			// report among them) take their optional filters as JSON lists
			// its planner cannot match against any index, so they scan the
			// table with or without idx_outbox_tasks_state_changed, which
			// every move rewrote.
			{Name: "idx_outbox_tasks_state_changed"},
			{Name: "idx_outbox_tasks_lease"},
			// Claims of one type and, on Postgres, listings and counts by
			// state: every move rewrote it (10.7 µs and 396 WAL bytes a task,
			// scripts/index-cost), replaced by the partial
			// idx_outbox_tasks_claim_type and idx_outbox_tasks_offpath (now
			// idx_outbox_tasks_settled).
			{Name: "idx_outbox_tasks_claim"},
			// Replaced by idx_outbox_tasks_settled, which holds the COMPLETED
			// tasks too (the board's counts by state).
			{Name: "idx_outbox_tasks_offpath", Only: Postgres},
		},
		// The plain token, before issue 12.
		Retired: []Retired{{Column: "lease_token"}},
	}
}

func taskDeps() Table {
	return Table{
		Name: "cks_task_deps",
		Columns: []Column{
			ref("task_id", "cks_outbox_tasks(task_id)"),
			ref("depends_on", "cks_outbox_tasks(task_id)"),
		},
		PrimaryKey: []string{"task_id", "depends_on"},
		Indexes:    []Index{{Name: "idx_task_deps_depends_on", Keys: []Key{K("depends_on")}}},
	}
}

func taskEvents() Table {
	return Table{
		Name: "cks_task_events",
		Columns: []Column{
			{Name: "event_id", Type: Identity},
			// No foreign key: it cost a check of the task (a key-share
			// lock of its row) per event. The ledger is the only writer
			// of events, each for a task it inserted or locked in the same
			// transaction, and tasks are never deleted
			// (backend's TestEventsHaveTheirTasks proves it of a mixed load).
			{Name: "task_id", Type: BigInt, NotNull: true},
			at("at"),
			textOr("actor"),
			textOr("from_state"),
			text("to_state"),
			intOr("attempt", "0"),
			textOr("reason"),
			// An edit's changes: a JSON list of each field's old and new
			// value (cks.FieldChange); '' for an event that changed no
			// field (every state change, and every event written before
			// the column existed).
			textOr("changes"),

			// An attempt's end (issue 27) holds the whole attempt: its
			// claim (claimed_at, the worker: '' when it is the end's actor)
			// and its start (started_at, NULL when it never ran), which no
			// row of their own records. NULL claimed_at: any other event,
			// and every one written before the columns existed.
			{Name: "claimed_at", Type: Time},
			{Name: "started_at", Type: Time},
			textOr("worker"),
		},
		// A task's events, in order, are what every read of events asks
		// for. On Postgres that is the primary key, the one index of the
		// table (each event had two entries, the id's key and the task's
		// index: 264 WAL bytes a task, scripts/index-cost); SQLite's rowid
		// is the event id, so it keeps the task's index.
		PrimaryKey:        []string{"task_id", "event_id"},
		PrimaryKeyOnly:    Postgres,
		RetiredPrimaryKey: []string{"event_id"},
		// The events of a time window (task_stats' charts of the last
		// hour) are read by their time. Events are appended as time goes,
		// so on Postgres a block range index serves: the ranges of the
		// window, at no index write per event (a B-tree wrote one, 72 WAL
		// bytes, on every attempt's end; issue 27).
		Indexes: []Index{{Name: "idx_task_events_task", Keys: []Key{K("task_id"), K("event_id")}, Only: SQLite},
			{Name: "idx_task_events_at", Keys: []Key{K("at")}, Only: SQLite},
			{Name: "idx_task_events_at_brin", Keys: []Key{K("at")}, BRIN: true, Only: Postgres}},
		RetiredIndexes: []RetiredIndex{{Name: "idx_task_events_task", Only: Postgres}, {Name: "idx_task_events_at", Only: Postgres}},
		// Append-only, enforced by the database itself (DESIGN §4).
		AppendOnly:        &AppendOnly{},
		RetiredReferences: []string{"task_id"},
	}
}

func taskEvidence() Table {
	return Table{
		Name: "cks_task_evidence",
		Columns: []Column{
			pk("evidence_id"),
			ref("task_id", "cks_outbox_tasks(task_id)"),
			reqInt("attempt"),
			reqInt("revision"),
			text("kind"),
			textOr("body"),
			textOr("actor"),
			at("created_at"),
			// The task's restarts when recorded: (restart, attempt) is the
			// attempt's identity (cks.AttemptView).
			intOr("restart", "0"),
		},
		Indexes: []Index{{Name: "idx_task_evidence_task", Keys: []Key{K("task_id"), K("attempt"), K("evidence_id")}}},
	}
}

func taskOutput() Table {
	return Table{
		// Issue 43 item 3: the live output of attempts, in chunks an
		// executor appends under its lease (append_output). seq numbers a
		// task's chunks from 1 (the readers' cursor); byte_offset is how
		// many bytes of the attempt's output (restart, attempt) came before
		// the chunk, size its length in bytes. Each attempt keeps a bounded
		// tail: its oldest chunks are deleted past the bound, and a note row
		// (size 0, dropped > 0, at the seq of the newest chunk deleted)
		// says how many bytes are gone.
		Name: "cks_task_output",
		Columns: []Column{
			pk("output_id"),
			ref("task_id", "cks_outbox_tasks(task_id)"),
			{Name: "seq", Type: BigInt, NotNull: true},
			reqInt("attempt"),
			intOr("restart", "0"),
			textOr("stream"),
			textOr("body"),
			{Name: "byte_offset", Type: BigInt, NotNull: true, Default: Zero},
			intOr("size", "0"),
			{Name: "dropped", Type: BigInt, NotNull: true, Default: Zero},
			at("created_at"),
		},
		Indexes: []Index{{Name: "idx_task_output_seq", Unique: true, Keys: []Key{K("task_id"), K("seq")}}},
	}
}

func taskDecisions() Table {
	return Table{
		// Decisions an executor made during an attempt, with the task
		// revision they were derived from (ADR 0016, ADR 0020 §6).
		Name: "cks_task_decisions",
		Columns: []Column{
			pk("decision_id"),
			ref("task_id", "cks_outbox_tasks(task_id)"),
			reqInt("attempt"),
			// Postgres has a default, SQLite none (as first created).
			{Name: "restart", Type: Int, NotNull: true, Default: Default{Postgres: "0"}},
			reqInt("revision"),
			reqInt("derived_from_revision"),
			text("kind"),
			textOr("text"),
			textOr("actor"),
			at("created_at"),
		},
		Indexes:    []Index{{Name: "idx_task_decisions_task", Keys: []Key{K("task_id"), K("decision_id")}}},
		AppendOnly: &AppendOnly{},
	}
}

func taskAborts() Table {
	pending := literal(string(cks.AbortPending))
	return Table{
		// Abort requests of stop, update and cancel of a leased task, and
		// their outcomes (ADR 0020 §5).
		Name: "cks_task_aborts",
		Columns: []Column{
			pk("abort_id"),
			ref("task_id", "cks_outbox_tasks(task_id)"),
			// driver.HashLeaseToken of the revoked lease's token.
			textOr("lease_token_hash"),
			textOr("executor"),
			reqInt("attempt"),
			// Postgres has defaults for these two, SQLite none (as first created).
			{Name: "restart", Type: Int, NotNull: true, Default: Default{Postgres: "0"}},
			textOr("requested_by"),
			textOr("reason"),
			at("requested_at"),
			at("deadline_at"),
			{Name: "outcome", Type: Text, NotNull: true, Default: Default{Postgres: pending}},
			{Name: "resolved_at", Type: Time},
		},
		Indexes: []Index{
			// Only the first Postgres backend had this one (SQLite's index of
			// that name was on the plain token, dropped with it).
			{Name: "idx_task_aborts_task", Keys: []Key{K("task_id"), K("abort_id")}, Only: Postgres},
			{Name: "idx_task_aborts_lease", Keys: []Key{K("task_id"), K("lease_token_hash")}},
			{Name: "idx_task_aborts_pending", Keys: []Key{K("deadline_at")}, Where: "outcome = " + pending},
		},
		// The plain token, before issue 12 (SQLite indexed it).
		Retired: []Retired{{Column: "lease_token", Indexes: []RetiredIndex{{Name: "idx_task_aborts_task", Only: SQLite}}}},
	}
}

func sweeperControl() Table {
	return Table{
		// ADR-015: a row only for a sweeper whose default was overridden.
		Name: "cks_sweeper_control",
		Columns: []Column{
			textKey("agent_id"),
			{Name: "desired_running", Type: Bool, NotNull: true},
			at("updated_at"),
		},
	}
}

func pausedTypes() Table {
	return Table{
		// Issue 42: a row for each task type paused fleet-wide (pause_type),
		// deleted by resume_type. The claims skip a type that has one.
		Name: "cks_paused_types",
		Columns: []Column{
			textKey("type"),
			text("paused_by"),
			textOr("reason"),
			at("paused_at"),
		},
	}
}

func limits() Table {
	return Table{
		// Issue 42: one row per concurrency limit (set_limit). A keyed
		// claim locks them all first (Postgres: FOR UPDATE), so the keyed
		// claims of every hub take turns and each counts the holders the
		// previous one committed.
		Name: "cks_limits",
		Columns: []Column{
			textKey("name"),
			text("pattern"),
			{Name: "max_running", Type: Int, NotNull: true},
			textOr("created_by"),
			at("created_at"),
			at("updated_at"),
			// A rate limit: at most starts claims per key in any interval
			// (0, 0: none).
			{Name: "starts", Type: Int, NotNull: true, Default: Zero},
			{Name: "interval_ms", Type: BigInt, NotNull: true, Default: Zero},
			// A spend budget (issue 43): at most max_tokens tokens and
			// max_cost_nanos of cost per key in each window of window_ms,
			// windows aligned to the Unix epoch (0, 0, 0: none).
			{Name: "max_tokens", Type: BigInt, NotNull: true, Default: Zero},
			{Name: "max_cost_nanos", Type: BigInt, NotNull: true, Default: Zero},
			{Name: "window_ms", Type: BigInt, NotNull: true, Default: Zero},
		},
		// A key's limit is its most specific pattern's: two limits of one
		// pattern would leave it to chance.
		Indexes: []Index{{Name: "idx_limits_pattern", Unique: true, Keys: []Key{K("pattern")}}},
	}
}

func keyStarts() Table {
	return Table{
		// Issue 42: one row per claim of a task for each of its keys that a
		// rate limit governs (starts per interval), written by the keyed
		// claim; the keyed claim reads those of the longest interval and
		// deletes the older ones.
		Name: "cks_key_starts",
		Columns: []Column{
			pk("start_id"),
			text("key"),
			at("started_at"),
		},
		Indexes: []Index{{Name: "idx_key_starts_at", Keys: []Key{K("started_at")}}},
	}
}

func usage() Table {
	big := func(name string) Column { return Column{Name: name, Type: BigInt, NotNull: true, Default: Zero} }
	return Table{
		// Issue 43: one row per report_usage — what one call of an attempt
		// spent (tokens, and cost in billionths of a unit: exact, never a
		// float), with the task's type and concurrency keys as they were,
		// so that a report is summed by any of them without a join. No
		// reference to the task: what was spent stays on the books when
		// the task is purged.
		Name: "cks_usage",
		Columns: []Column{
			pk("usage_id"),
			{Name: "task_id", Type: BigInt, NotNull: true},
			reqInt("attempt"),
			intOr("restart", "0"),
			text("type"),
			textOr("concurrency_keys"),
			textOr("model"),
			big("input_tokens"),
			big("output_tokens"),
			big("cost_nanos"),
			text("currency"),
			textOr("agent"),
			textOr("principal"),
			at("reported_at"),
		},
		Indexes: []Index{
			{Name: "idx_usage_task", Keys: []Key{K("task_id"), K("usage_id")}},
			{Name: "idx_usage_reported", Keys: []Key{K("reported_at"), K("usage_id")}},
		},
	}
}

func taskSpend() Table {
	big := func(name string) Column { return Column{Name: name, Type: BigInt, NotNull: true, Default: Zero} }
	return Table{
		// Issue 43: a task's budget (max_tokens, max_cost; 0: none) and
		// what its attempts spent against it, a row only for a task that
		// has a budget or reported usage. report_usage adds to it in the
		// transaction that holds the task's row, so a breach is decided
		// once.
		Name: "cks_task_spend",
		Columns: []Column{
			{Name: "task_id", Type: BigInt, PrimaryKey: true},
			big("max_tokens"),
			big("max_cost_nanos"),
			big("input_tokens"),
			big("output_tokens"),
			big("cost_nanos"),
			big("reports"),
		},
	}
}

func keySpend() Table {
	big := func(name string) Column { return Column{Name: name, Type: BigInt, NotNull: true, Default: Zero} }
	return Table{
		// Issue 43: what the tasks holding a key reported spending in one
		// window of a budget's length (window_ms, starting at
		// window_start), for the keys a limit with a budget governs:
		// report_usage adds to it, the keyed claim reads the current
		// window's and deletes the old ones.
		Name: "cks_key_spend",
		Columns: []Column{
			big("window_ms"),
			at("window_start"),
			text("key"),
			big("tokens"),
			big("cost_nanos"),
		},
		PrimaryKey: []string{"window_ms", "window_start", "key"},
	}
}

func sweeperPasses() Table {
	return Table{
		// Issue 24: one row per completed pass of a sweeper, written by the
		// runner at the pass's end on the hub that ran it (hub_id, the
		// leader elector's id; '' for a runner without one), read newest
		// first per sweeper by list_agents' recent_passes, and pruned by the
		// retention sweeper (by age and to a number per sweeper). details is
		// the JSON of what the pass reported beyond its count, '' for none.
		Name: "cks_sweeper_passes",
		Columns: []Column{
			pk("pass_id"),
			text("agent_id"),
			textOr("hub_id"),
			at("started_at"),
			{Name: "duration_ms", Type: Float, NotNull: true},
			reqInt("result_count"),
			textOr("error"),
			textOr("details"),
		},
		Indexes: []Index{
			{Name: "idx_sweeper_passes_agent", Keys: []Key{K("agent_id"), {Column: "started_at", Desc: true}, {Column: "pass_id", Desc: true}}},
			{Name: "idx_sweeper_passes_started", Keys: []Key{K("started_at")}},
		},
	}
}

func leaders() Table {
	return Table{
		// Issue 26: one row per leadership ("maintenance": the hub that runs
		// the sweepers' passes), held by leader_id until expires_at (on
		// Postgres by the database's clock).
		Name:    "cks_leaders",
		Columns: []Column{textKey("name"), text("leader_id"), at("elected_at"), at("expires_at")},
	}
}

func schedules() Table {
	return Table{
		// Issue 42: one row per schedule (cks.Schedule). task is the JSON
		// of its task template (cks.ScheduleTask), kept byte for byte.
		// last_slot is the latest slot dealt with (fired or skipped), the
		// mark the leader's fire moves in the transaction that creates the
		// slot's task, so a slot fires once; NULL before the first.
		Name: "cks_schedules",
		Columns: []Column{
			textKey("name"),
			text("cron"),
			text("time_zone"),
			text("misfire"),
			{Name: "task", Type: Text, NotNull: true, Default: EmptyObject},
			{Name: "paused", Type: Bool, NotNull: true},
			textOr("paused_by"),
			textOr("created_by"),
			at("created_at"),
			at("updated_at"),
			{Name: "last_slot", Type: Time},
			{Name: "last_fired_at", Type: Time},
			{Name: "last_task_id", Type: BigInt, NotNull: true, Default: Zero},
		},
	}
}

func objects() Table {
	return Table{
		// The knowledge graph's nodes (ADR-007). content is TEXT holding the
		// canonical JSON (cks.CanonicalJSON) byte for byte: JSONB would
		// re-encode it. claimed_by = '' means unclaimed (claimed_at NULL).
		Name: "cks_objects",
		Columns: []Column{
			pk("object_id"),
			text("kind"),
			textOr("title"),
			{Name: "content", Type: Text, NotNull: true, Default: EmptyObject},
			text("content_hash"),
			textOr("current_status"),
			textOr("claimed_by"),
			// The SHA-256 (hex) of the current claim token, '' when unclaimed:
			// knowledge.Service never stores the token. (The first backends
			// stored it plain here; such a claim no longer fences once the
			// service takes over, and the stale-claim release frees it.)
			textOr("claim_token"),
			{Name: "claimed_at", Type: Time},
			intOr("round", "0"),
			textOr("created_by"),
			at("created_at"),
			at("updated_at"),
			// The number (cks_object_versions.version) of the latest written
			// version, whose content the row carries, and the number of head
			// versions (forked when > 1). Objects written before versions
			// existed get their content as a first version when head_version
			// is added (a backfill).
			{Name: "head_version", Type: BigInt, NotNull: true, Default: Zero},
			intOr("heads", "1"),
		},
		Indexes: []Index{
			// Claims: the unclaimed objects of one status, oldest first.
			{Name: "idx_objects_claim", Keys: []Key{K("current_status"), K("claimed_by"), K("object_id")}, Only: SQLite},
			{Name: "idx_objects_claim", Keys: []Key{K("current_status"), K("object_id")}, Where: "claimed_by = ''", Only: Postgres},
			// Lists by status (claimed or not), in cursor order.
			{Name: "idx_objects_status", Keys: []Key{K("current_status"), K("object_id")}, Only: Postgres},
			{Name: "idx_objects_kind", Keys: []Key{K("kind"), K("object_id")}},
			// Stale claims: only claimed objects are in it.
			{Name: "idx_objects_claimed_at", Keys: []Key{K("claimed_at")}, Where: "claimed_at IS NOT NULL", Only: SQLite},
			{Name: "idx_objects_claimed_at", Keys: []Key{K("claimed_at")}, Where: "claimed_by <> ''", Only: Postgres},
			// Forked objects: only they are in it, in cursor order.
			{Name: "idx_objects_forked", Keys: []Key{K("object_id")}, Where: "heads > 1"},
		},
	}
}

func objectVersions() Table {
	return Table{
		// One row per content write of an object (issue 8), forming a DAG
		// through parents (ascending; empty for a first version). content is
		// the canonical JSON byte for byte, like cks_objects.content. is_head
		// marks the versions no later version was based on or merged.
		Name: "cks_object_versions",
		Columns: []Column{
			pk("version_id"),
			ref("object_id", "cks_objects(object_id)"),
			{Name: "parents", Type: BigIntArray, NotNull: true, Default: EmptyList},
			// SQLite has a default, Postgres none (as first created).
			{Name: "content", Type: Text, NotNull: true, Default: Default{SQLite: "'{}'"}},
			text("content_hash"),
			textOr("author"),
			at("created_at"),
			// Inserts always set it; the defaults differ as first created.
			{Name: "is_head", Type: BoolInt, NotNull: true, Default: Default{SQLite: "1", Postgres: "false"}},
			// The version's number within its object: 1, 2, 3 … in the order
			// they were written (version_id is the row id, a sequence across
			// all objects, never shown). parents and cks_objects.head_version
			// hold these numbers. An older database's versions are numbered in
			// version_id order when the column is added (a backfill).
			{Name: "version", Type: BigInt, NotNull: true, Default: Zero},
		},
		Indexes: []Index{
			{Name: "idx_object_versions_object", Keys: []Key{K("object_id"), K("version_id")}},
			// One version per number of an object, and its versions by number.
			{Name: "idx_object_versions_version", Unique: true, Keys: []Key{K("object_id"), K("version")}},
			// The head versions of one object, ascending by id.
			{Name: "idx_object_versions_head", Keys: []Key{K("object_id")}, Where: "is_head = 1", Only: SQLite},
			{Name: "idx_object_versions_heads", Keys: []Key{K("object_id")}, Where: "is_head", Only: Postgres},
		},
		// A version is never rewritten or removed: only is_head changes.
		AppendOnly: &AppendOnly{Mutable: []string{"is_head"}},
	}
}

func edges() Table {
	return Table{
		// Edges of the knowledge graph: base_type for graph algorithms,
		// semantic_type for what the edge means (ADR-007 §4).
		Name: "cks_edges",
		Columns: []Column{
			pk("edge_id"),
			ref("src", "cks_objects(object_id)"),
			ref("dst", "cks_objects(object_id)"),
			text("base_type"),
			textOr("semantic_type"),
			{Name: "weight", Type: Float},
			at("created_at"),
		},
		Indexes: []Index{
			{Name: "idx_edges_src", Keys: []Key{K("src")}},
			{Name: "idx_edges_dst", Keys: []Key{K("dst")}},
		},
	}
}

func transitionLog() Table {
	return Table{
		// The objects' transition logs (ADR-007 §1, §4).
		Name: "cks_transition_log",
		Columns: []Column{
			pk("seq"),
			ref("object_id", "cks_objects(object_id)"),
			at("ts"),
			textOr("agent"),
			text("action"),
			textOr("transitioned_to"),
			{Name: "reasoning_node_id", Type: BigInt, References: "cks_objects(object_id)"},
			// Postgres has a default, SQLite none (as first created).
			{Name: "content_hash", Type: Text, NotNull: true, Default: Default{Postgres: "''"}},
			intOr("round", "0"),
		},
		Indexes:    []Index{{Name: "idx_transition_log_object", Keys: []Key{K("object_id"), K("seq")}}},
		AppendOnly: &AppendOnly{},
	}
}

func changes() Table {
	return Table{
		// The per-topic change counters the SQLite listener polls (Postgres
		// has NOTIFY instead).
		Name: "cks_changes",
		Columns: []Column{
			textKey("topic"),
			{Name: "seq", Type: BigInt, NotNull: true},
		},
		Only: SQLite,
	}
}

// literal renders s as an SQL string literal. Only constants of the code
// (states, outcomes) go through it, never input.
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// running are the states of a task between its enqueue and its end on
// the ledger's hot path (idx_outbox_tasks_settled leaves them out; the
// board's counts by state read them from the claim and lease indexes).
var running = [...]cks.TaskState{cks.TaskOpen, cks.TaskClaimed, cks.TaskRunning}

// The sets of states the indexes' WHERE clauses name, from the leaf: the
// schema sits below the services, so it cannot read package ledger's sets,
// and a ledger test (TestSchemaStatesAreTheLedgers) holds these to them.
var (
	// TerminalStates are ledger.Terminal: a dedupe key is unique among
	// the tasks in none of them.
	TerminalStates = [...]cks.TaskState{cks.TaskCompleted, cks.TaskFailed, cks.TaskCancelled}
	// LeasedStates are the states whose expired leases the ledger's
	// ReclaimExpired reclaims.
	LeasedStates = [...]cks.TaskState{cks.TaskClaimed, cks.TaskRunning, cks.TaskReviewing}
	// HoldingStates are ledger.Holding: a task in them holds its
	// concurrency keys.
	HoldingStates = [...]cks.TaskState{cks.TaskClaimed, cks.TaskRunning}
)

// literalList renders states as a parenthesised list of literals.
func literalList(states []cks.TaskState) string {
	q := make([]string, len(states))
	for i, s := range states {
		q[i] = literal(string(s))
	}
	return "(" + strings.Join(q, ", ") + ")"
}
