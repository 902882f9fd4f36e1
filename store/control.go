package store

import (
	"context"
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

// DependencyRelease is the outcome of Tasks.ReleaseDependencies.
type DependencyRelease struct {
	// Released counts WAITING tasks moved to OPEN (every dependency COMPLETED).
	Released int `json:"released"`
	// Blocked counts WAITING tasks moved to BLOCKED (a dependency FAILED or CANCELLED).
	Blocked int `json:"blocked"`
}
