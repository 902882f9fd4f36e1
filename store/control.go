package store

import (
	"context"
	"strings"
	"time"
)

// SweeperControl stores the persistent start/stop override of each in-process
// sweeper (ADR-015, table cks_sweeper_control). A row exists only for a sweeper
// whose config default was overridden; no row means the default applies.
type SweeperControl interface {
	// SetSweeperDesiredRunning records the override for id (an upsert that
	// also sets updated_at from the store's clock; it publishes a change on
	// TopicSweeperControl in the same transaction). An empty id is a
	// FieldError naming agent_id.
	SetSweeperDesiredRunning(ctx context.Context, id string, running bool) error
	// GetSweeperDesiredRunning returns the override, or nil when there is no
	// row. An empty id is a FieldError naming agent_id.
	GetSweeperDesiredRunning(ctx context.Context, id string) (*bool, error)
}

// ValidateSweeperID reports a FieldError naming agent_id when id is empty or
// blank; backends call it before touching cks_sweeper_control.
func ValidateSweeperID(id string) error {
	if err := ValidateText("agent_id", id); err != nil {
		return err
	}
	if strings.TrimSpace(id) == "" {
		return fieldError("agent_id", "a non-empty sweeper id such as \"dependency_release\"")
	}
	return nil
}

// Change topics published by writes and delivered by Changes.WatchChanges.
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
)

// Changes delivers cross-process change notifications: a wake-up that tells a
// watcher to re-read, never the data itself, so a coalesced or missed
// notification loses nothing as long as the watcher also re-reads on its own
// schedule. On Postgres it is LISTEN/NOTIFY on one dedicated connection that
// reconnects when lost; on SQLite a cheap poll of a per-topic change counter
// (table cks_changes) every ChangePollInterval, plus an immediate wake-up
// for writes made through the same store handle.
//
// A writer publishes a topic in the same transaction as the write that
// causes it, so a watcher is woken exactly when the change is visible (each
// backend has one internal publish helper for that; new topics only need a
// constant here and a call of that helper in their write).
type Changes interface {
	// WatchChanges calls f with the topic each time a change to one of topics
	// is committed, by this or any other process on the same database, until
	// ctx ends; then it returns nil. Calls to f are sequential (several
	// changes may be coalesced into one call). f is called once for every
	// topic when the watch is established, and again after every reconnect,
	// since changes may have been missed before or meanwhile; a caller can
	// therefore read its state in f instead of before the watch. A lost
	// connection is retried with backoff, not returned. An empty topics list
	// or an empty topic is a FieldError naming topics.
	WatchChanges(ctx context.Context, topics []string, f func(topic string)) error
}

// DefaultChangePollInterval is how often a polling backend (SQLite) checks
// for changes made by other processes; see WithChangePollInterval.
const DefaultChangePollInterval = 100 * time.Millisecond

// WithChangePollInterval sets how often a polling backend (SQLite) checks
// cks_changes for changes committed by other processes. Backends that are
// pushed changes (Postgres) ignore it. d <= 0 means the default.
func WithChangePollInterval(d time.Duration) Option {
	return func(o *Options) { o.ChangePollInterval = d }
}

// ValidateTopics reports a FieldError naming topics when topics is empty or
// holds an empty topic, and returns the set of distinct topics.
func ValidateTopics(topics []string) (map[string]bool, error) {
	if len(topics) == 0 {
		return nil, fieldError("topics", "at least one change topic")
	}
	set := make(map[string]bool, len(topics))
	for _, t := range topics {
		if t == "" {
			return nil, fieldError("topics", "non-empty change topics")
		}
		if err := ValidateText("topics", t); err != nil {
			return nil, err
		}
		set[t] = true
	}
	return set, nil
}

// DependencyRelease is the outcome of Tasks.ReleaseDependencies.
type DependencyRelease struct {
	// Released counts WAITING tasks moved to OPEN (every dependency COMPLETED).
	Released int `json:"released"`
	// Blocked counts WAITING tasks moved to BLOCKED (a dependency FAILED or CANCELLED).
	Blocked int `json:"blocked"`
}
