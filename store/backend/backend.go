// Package backend opens a store.Store from a database URL: the driver the
// URL names (driver/sqlite or driver/postgres) under the services that
// hold every rule (Store). It is the only package that imports both
// drivers and every service.
package backend

import (
	"context"
	"fmt"
	"strings"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/postgres"
	"github.com/cks-dev/cks/driver/sqlite"
	"github.com/cks-dev/cks/knowledge"
	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/liveness"
	"github.com/cks-dev/cks/notifier"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/sweeper"
)

// Open opens the store named by url:
//   - "postgres://…" or "postgresql://…": Postgres;
//   - "sqlite:PATH" or a plain file path: SQLite, creating the file and its directory.
//
// Any other "scheme://" is refused with an error that lists the accepted forms.
// opts (driver.WithClock, driver.WithChangePollInterval) apply to the driver
// and the services of the returned handle.
func Open(ctx context.Context, url string, opts ...driver.Option) (store.Store, error) {
	d, err := openDriver(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	return New(d, opts...), nil
}

// openDriver opens the driver url names.
func openDriver(ctx context.Context, url string, opts []driver.Option) (driver.Driver, error) {
	switch {
	case url == "":
		return nil, fmt.Errorf("empty database URL: %w", errForms)
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return postgres.Open(ctx, url, opts...)
	case strings.HasPrefix(url, "sqlite://"):
		return sqlite.Open(ctx, strings.TrimPrefix(url, "sqlite://"), opts...)
	case strings.HasPrefix(url, "sqlite:"):
		return sqlite.Open(ctx, strings.TrimPrefix(url, "sqlite:"), opts...)
	}
	if scheme, _, ok := strings.Cut(url, "://"); ok {
		return nil, fmt.Errorf("unknown database scheme %q in %q: %w", scheme, url, errForms)
	}
	return sqlite.Open(ctx, url, opts...)
}

var errForms = fmt.Errorf("expected a file path, sqlite:PATH, or postgres://USER@HOST:PORT/DB: %w", cks.ErrInvalid)

// The services, under names of their own so that one struct can embed
// both Service types.
type (
	ledgerService    = ledger.Service
	knowledgeService = knowledge.Service
)

// Store is the whole of store.Store over one driver, each part served by
// the package that owns its rules: the task ledger (ledger.Service:
// store.Tasks, store.TaskControl), the knowledge store (knowledge.Service:
// store.Knowledge, store.Versions), process liveness (liveness.Rows),
// principals (auth.Principals), sweeper overrides (sweeper.ControlRows),
// and change notification (notifier.Notifier: one listener of the driver
// for every watcher of the handle). Storage health is the driver's. The
// Store adds no rule of its own.
type Store struct {
	*ledgerService
	*knowledgeService
	*liveness.Rows
	*auth.Principals
	*sweeper.ControlRows
	*notifier.Notifier
	drv driver.Driver
}

var _ store.Store = (*Store)(nil)

// New returns the store over d, which it owns from then on (Close closes
// it). opts are those d was opened with: the clock (driver.WithClock) tells
// the services the time of every write whose time is not an argument.
func New(d driver.Driver, opts ...driver.Option) *Store {
	clk := driver.ApplyOptions(opts).Clock
	return &Store{
		ledgerService:    ledger.NewService(d, opts...),
		knowledgeService: knowledge.New(d, clk),
		Rows:             liveness.NewRows(d),
		Principals:       auth.NewPrincipals(d),
		ControlRows:      sweeper.NewControlRows(d, clk),
		Notifier:         notifier.New(d.Listener, nil),
		drv:              d,
	}
}

// Driver returns the driver the store runs on, for tests of what the
// services leave in the database.
func (s *Store) Driver() driver.Driver { return s.drv }

// StorageHealth implements store.Store: the driver's Health.
func (s *Store) StorageHealth(ctx context.Context) error { return s.drv.Health(ctx) }

// Backend implements store.Store: the driver's dialect, "sqlite" or
// "postgres".
func (s *Store) Backend() string { return s.drv.Dialect() }

// Close implements store.Store: it ends the change listener (every
// WatchChanges stops receiving), then closes the driver's connections.
func (s *Store) Close() error {
	s.Notifier.Close()
	return s.drv.Close()
}
