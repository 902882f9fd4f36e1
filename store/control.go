package store

import "context"

// SweeperControl stores the persistent start/stop override of each in-process
// sweeper (ADR-015, table cks_sweeper_control). A row exists only for a sweeper
// whose config default was overridden; no row means the default applies.
type SweeperControl interface {
	// SetSweeperDesiredRunning records the override for id (an upsert; it also
	// publishes a change on TopicSweeperControl in the same transaction).
	SetSweeperDesiredRunning(ctx context.Context, id string, running bool) error
	// GetSweeperDesiredRunning returns the override, or nil when there is no row.
	GetSweeperDesiredRunning(ctx context.Context, id string) (*bool, error)
}

// Change topics published by writes and delivered by Changes.WatchChanges.
const (
	// TopicSweeperControl: a row of cks_sweeper_control changed.
	TopicSweeperControl = "sweeper_control"
)

// Changes delivers cross-process change notifications: a wake-up that tells a
// watcher to re-read, never the data itself, so a coalesced or missed
// notification loses nothing as long as the watcher also re-reads on its own
// schedule. On Postgres it is LISTEN/NOTIFY on one dedicated connection that
// reconnects when lost; on SQLite a cheap poll of a per-topic change counter.
type Changes interface {
	// WatchChanges calls f with the topic each time a change to one of topics
	// is committed, by this or any other process on the same database, until
	// ctx ends; then it returns nil. Calls to f are sequential. A lost
	// connection is retried, not returned; f is also called once for every
	// topic after a reconnect, since changes may have been missed meanwhile.
	WatchChanges(ctx context.Context, topics []string, f func(topic string)) error
}

// DependencyRelease is the outcome of Tasks.ReleaseDependencies.
type DependencyRelease struct {
	// Released counts WAITING tasks moved to OPEN (every dependency COMPLETED).
	Released int `json:"released"`
	// Blocked counts WAITING tasks moved to BLOCKED (a dependency FAILED or CANCELLED).
	Blocked int `json:"blocked"`
}
