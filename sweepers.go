package cks

import "time"

// SweeperStatus is the agent_status record of one in-process sweeper
// (ADR-015). Pointer fields are null until the event they describe has
// happened.
type SweeperStatus struct {
	// AgentID is the sweeper's id.
	AgentID string `json:"agent_id"`
	// Kind is always SweeperKind.
	Kind string `json:"kind"`
	// ConfigEnabled is the static enablement from configuration.
	ConfigEnabled bool `json:"config_enabled"`
	// Running reports whether the loop is running (or about to, after Start).
	Running bool `json:"running"`
	// IntervalS is the interval between passes, in seconds.
	IntervalS float64 `json:"interval_s"`
	// LastRunAt is when the last completed pass started.
	LastRunAt *time.Time `json:"last_run_at"`
	// LastResultCount is the count the last completed pass returned.
	LastResultCount *int `json:"last_result_count"`
	// LastRunDurationMS is how long the last completed pass took.
	LastRunDurationMS *float64 `json:"last_run_duration_ms"`
	// LastError is the error of the last pass or of a later failed override
	// read; a successful pass clears it.
	LastError *string `json:"last_error"`
	// RunCount is the number of passes completed since the process started.
	RunCount int64 `json:"run_count"`
	// DesiredRunning is the stored override as last read: nil for no row or
	// not read yet.
	DesiredRunning *bool `json:"desired_running"`
	// Details is what the last completed pass reported beyond its count, for
	// a sweeper that implements sweeper.Detailer (graph_health: its counts and
	// example cycles); omitted for the others.
	Details any `json:"details,omitempty"`
	// Standby reports that this hub's loop runs but skips its passes: the
	// maintenance leader, another hub on the same database, runs them.
	// Standby and Leader are omitted when false and empty, so a lone hub's
	// status has the seed's shape.
	Standby bool `json:"standby,omitempty"`
	// Leader is the id of the hub whose passes run (the maintenance
	// leader), as read with this status; empty when no hub holds it.
	Leader string `json:"leader,omitempty"`
	// RecentPasses are the sweeper's last completed passes, newest first
	// (at most sweeper.RecentPassesCap), read from the database
	// (cks_sweeper_passes): they survive a restart, and every hub on the
	// database reads the same ones, the maintenance leader's included.
	RecentPasses []SweeperPass `json:"recent_passes,omitempty"`
}

// SweeperPass is one completed pass of a sweeper.
type SweeperPass struct {
	// At is when the pass started.
	At time.Time `json:"at"`
	// DurationMS is how long it took.
	DurationMS float64 `json:"duration_ms"`
	// Count is what it counted (leases reclaimed, tasks enqueued, ...).
	Count int `json:"count"`
	// Error is the pass's error, "" when it succeeded.
	Error string `json:"error,omitempty"`
	// Hub is the id of the hub that ran the pass (the maintenance leader
	// at the time), "" when the runner had none.
	Hub string `json:"hub,omitempty"`
	// Details is what the pass reported beyond its count (the Details of
	// a sweeper.Detailer: graph_health's counts, retention's report),
	// omitted for the others.
	// (Read back from the database it holds a json.RawMessage.)
	Details any `json:"details,omitempty"`
}

// Leader is the hub holding a leadership among the hubs on one database
// (cks_leaders): for MaintenanceLeadership, the hub whose sweepers run their
// passes.
type Leader struct {
	// Name is the leadership.
	Name string `json:"name"`
	// ID is the holding hub's id: its host, process id and a random suffix.
	ID string `json:"id"`
	// ElectedAt is when the holder took the leadership; ExpiresAt when it
	// lapses unless renewed (by the database's clock on Postgres).
	ElectedAt time.Time `json:"elected_at"`
	ExpiresAt time.Time `json:"expires_at"`
}
