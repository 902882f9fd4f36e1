package cks

import "time"

// AgentLiveness is one row of cks_agent_liveness (ADR-014): the heartbeat of one
// standalone agent process instance. A restarted process writes a new row under a
// new InstanceID; old rows stay as history.
type AgentLiveness struct {
	InstanceID        string    `json:"instance_id,omitempty"`
	ProcessKind       string    `json:"process_kind"`
	Hostname          string    `json:"hostname,omitempty"`
	PID               int       `json:"pid,omitempty"`
	LivenessIntervalS float64   `json:"liveness_interval_s,omitempty"`
	StartedAt         time.Time `json:"started_at,omitzero"`
	LastHeartbeatAt   time.Time `json:"last_heartbeat_at,omitzero"`
	// CurrentTaskID is the outbox task the process holds, nil when idle.
	CurrentTaskID *int64 `json:"current_task_id"`
	// CurrentTaskType is denormalised for display; empty when idle.
	CurrentTaskType string `json:"current_task_type,omitempty"`
	// DesiredState is "" (no stop requested; rows written before the column
	// existed read so too) or DesiredStopRequested (ADR-016). It is written
	// only by RequestAgentStop; UpsertAgentLiveness never changes it.
	DesiredState string `json:"desired_state,omitempty"`
	// ExitedAt is when the instance exited gracefully (its last write, with
	// its last heartbeat); zero while it runs, or when it died without
	// saying so (then only the TTL rule tells it is gone). An exited
	// instance reads stopped whatever its heartbeat.
	ExitedAt time.Time `json:"exited_at,omitzero"`
	// TaskTypes are the task types the instance claims (its --types);
	// none for an agent that claims no tasks, and for rows written by a
	// cks from before the column.
	TaskTypes []string `json:"task_types,omitempty"`
	// ReportedBy is the id of the principal whose report_process calls
	// write the row (only they may write it again); empty for a process
	// on the database, which writes its own row.
	ReportedBy string `json:"reported_by,omitempty"`
}

// DesiredStopRequested is the desired_state of a process asked to stop.
const DesiredStopRequested = "stop_requested"

// Validate reports the first field of r that a backend must not store.
func (r AgentLiveness) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"instance_id", r.InstanceID}, {"process_kind", r.ProcessKind},
		{"hostname", r.Hostname}, {"current_task_type", r.CurrentTaskType},
	} {
		if err := ValidateText(f.name, f.v); err != nil {
			return err
		}
	}
	if err := ValidateTexts("task_types", r.TaskTypes); err != nil {
		return err
	}
	switch {
	case r.InstanceID == "":
		return fieldError("instance_id", "a non-empty process instance id")
	case r.ProcessKind == "":
		return fieldError("process_kind", "a non-empty process kind")
	case r.Hostname == "":
		return fieldError("hostname", "a non-empty host name")
	case r.PID <= 0:
		return fieldError("pid", "a positive process id")
	case !(r.LivenessIntervalS > 0):
		return fieldError("liveness_interval_s", "a positive number of seconds")
	case r.StartedAt.IsZero():
		return fieldError("started_at", "a timestamp")
	case r.LastHeartbeatAt.IsZero():
		return fieldError("last_heartbeat_at", "a timestamp")
	case r.CurrentTaskID != nil && *r.CurrentTaskID <= 0:
		return fieldError("current_task_id", "a positive task id, or null when idle")
	case !r.ExitedAt.IsZero() && r.ExitedAt.Before(r.StartedAt):
		return fieldError("exited_at", "a time at or after started_at, or none while the process runs")
	}
	return nil
}

// ProcessStatus is the computed state of a process instance: alive or
// stopped by the liveness TTL rule at the time of the read (package
// liveness), or not_found.
type ProcessStatus string

// The statuses a process read can have.
const (
	// ProcessAlive: the instance heartbeated within 3 × its liveness interval.
	ProcessAlive ProcessStatus = "alive"
	// ProcessStopped: the instance exited, or its last heartbeat is older
	// than that.
	ProcessStopped ProcessStatus = "stopped"
	// ProcessNotFound: no instance of the kind has ever reported (a normal answer).
	ProcessNotFound ProcessStatus = "not_found"
)

// Process is one liveness row with its computed status.
type Process struct {
	AgentLiveness
	Status ProcessStatus `json:"status"`
	// HeartbeatAgeS is the number of seconds since the last heartbeat at read time.
	HeartbeatAgeS float64 `json:"heartbeat_age_s,omitempty"`
}

// ProcessStopResult is the answer to a stop request for a process (ADR-016).
type ProcessStopResult struct {
	// Found is false when there was no alive instance to ask: the kind
	// never ran or its newest instance is stopped, or the instance is gone.
	// That is an answer, not an error.
	Found       bool   `json:"found"`
	InstanceID  string `json:"instance_id,omitempty"`
	ProcessKind string `json:"process_kind,omitempty"`
}

// ListProcessesInput is the input of list_processes: by default the live
// instances (the newest of each kind and every alive one), the whole
// history with History; both paged newest-started first.
type ListProcessesInput struct {
	History bool   `json:"history,omitempty" jsonschema:"list the whole history (every instance that ever reported, exited ones included) instead of the live instances (the newest instance of each kind and every alive one)"`
	Alive   *bool  `json:"alive,omitempty" jsonschema:"only alive instances (true) or only stopped ones (false)"`
	Kind    Names  `json:"kind,omitempty" jsonschema:"only instances of any of these process kinds: one, or a list"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page (empty for the first)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"page size, 1 to 1000 (default 100)"`
}

// Check refuses a cursor no page of list_processes answered, naming
// cursor (ParseProcessCursor).
func (in *ListProcessesInput) Check() error {
	_, err := ParseProcessCursor(in.Cursor)
	return err
}

// ProcessCursor is where a page of list_processes goes on from: the last
// instance of the previous page, in the listing's order (started_at
// descending, then instance_id).
type ProcessCursor struct {
	StartedAt  time.Time
	InstanceID string
}

// String is the cursor as list_processes answers it in next_cursor (a
// TimeCursor's).
func (c ProcessCursor) String() string { return TimeCursor{At: c.StartedAt, ID: c.InstanceID}.String() }

// ParseProcessCursor reads a cursor String wrote; "" is the first page (a
// zero cursor). Anything else is a FieldError naming cursor.
func ParseProcessCursor(s string) (ProcessCursor, error) {
	c, err := ParseTimeCursor(s)
	return ProcessCursor{StartedAt: c.At, InstanceID: c.ID}, err
}

// After reports whether p comes after c in the listing's order (every
// instance does after the zero cursor).
func (c ProcessCursor) After(p AgentLiveness) bool {
	if c.StartedAt.IsZero() && c.InstanceID == "" {
		return true
	}
	return p.StartedAt.Before(c.StartedAt) || (p.StartedAt.Equal(c.StartedAt) && p.InstanceID > c.InstanceID)
}
