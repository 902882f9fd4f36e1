package cks

// Change topics: a write publishes its topic in the transaction that makes
// the change (driver Executor.Notify) — all but TopicTasksMoved, published
// after the commit, coalesced — and a watcher (package notifier) re-reads
// when one of its topics is committed, by this or any other process on the
// same database. The names are the NOTIFY channels on Postgres and the rows
// of cks_changes on SQLite.
const (
	// TopicSweeperControl: a row of cks_sweeper_control changed.
	TopicSweeperControl = "sweeper_control"
	// TopicAgentStop: a stop was requested for an agent process instance
	// (RequestAgentStop). Processes watch it to stop without waiting for
	// their next liveness tick.
	TopicAgentStop = "agent_stop"
	// TopicTasksReady: a task became OPEN (enqueued, released, retried,
	// reclaimed, answered, started). Idle agents watch it to claim at once
	// instead of at their next poll.
	TopicTasksReady = "tasks_ready"
	// TopicLeader: a hub resigned a leadership (cks_leaders). The other hubs
	// watch it to take the leadership over at once instead of when the
	// resigned lease would have run out.
	TopicLeader = "leader"
	// TopicPrincipals: a principal was deleted (its token revoked). The
	// hubs' token caches drop what they hold when it arrives.
	TopicPrincipals = "principals"
	// TopicFlowControl: a flow-control rule changed (a task type was paused
	// or resumed). Boards and panels re-read the rules when it arrives.
	TopicFlowControl = "flow_control"
	// TopicSchedules: a schedule was created, paused, resumed, triggered
	// or deleted (cks_schedules). The leader's schedule runner watches it
	// to set its timer to the new next slot at once; every hub tells its
	// viewers (the studio's Flow control page).
	TopicSchedules = "schedules"
)

// MaintenanceLeadership names the leadership of the hub that runs the
// sweepers' passes (the lease reaper among them) when several hubs share a
// database: the others keep their runners, which wait.
const MaintenanceLeadership = "maintenance"

// TopicObjects is the change topic of the knowledge store: published in the
// same transaction as every write that makes an object claimable — one
// created with a status, a status change, a claim given back or released as
// stale — so pipeline steps wake and re-query by status. Taking a claim does
// not publish: it makes nothing claimable, and waking every worker for it
// would only cost them an empty claim each. The notification never carries
// the object (ADR-007 §3).
const TopicObjects = "objects"

// TopicTaskAborts is the change topic of abort requests and confirmations:
// published by a stop, an update that restarts a running task and a cancel
// of a leased task, by an executor's confirmation (ConfirmAbort), and when
// an abort's deadline passes unconfirmed (ExpireAborts, or the wait of a
// stop). Executors watch it to learn of an abort without waiting for their
// next lease heartbeat; stop calls watch it for the confirmation.
const TopicTaskAborts = "task_aborts"

// TopicTasksMoved is the change topic of task moves: a task was created,
// claimed, started, or moved to any other state (completed, failed,
// stopped …) by any process — the hub, a standalone agent, any client of
// the ledger on the same database. The hub turns it into its "tasks" event,
// so an open board, task page or charts page follows work done outside the
// hub without waiting for its fallback poll. Unlike the other topics it is
// not published in the transaction of the change: that would put a NOTIFY
// in every completing commit, and Postgres serialises NOTIFYing commits on
// a global lock. Each handle publishes it instead after the commit, at most
// once per driver.DefaultMovesInterval (driver.WithMovesInterval) —
// at once after a quiet spell, then once at the end of each interval in
// which it moved more, so the last move is never left unpublished
// (notifier.Coalescer). Moves that make a task OPEN or request an abort
// still publish TopicTasksReady or TopicTaskAborts in their transaction.
const TopicTasksMoved = "tasks_moved"

// TopicTaskOutput is the change topic of live output: published in the
// transaction of every append_output. Each hub's one output feed watches it
// and reads the newest seq of the tasks its followers follow, once per
// wake, to wake those with new chunks (ledger.FollowOutput).
const TopicTaskOutput = "task_output"
