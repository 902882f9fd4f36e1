// Package backend opens a store.Store from a database URL, choosing the SQLite
// or Postgres backend by its form. It is the only package that imports both.
package backend

import (
	"context"
	"fmt"
	"strings"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/postgres"
	"github.com/cks-dev/cks/store/sqlite"
)

// Open opens the store named by url:
//   - "postgres://…" or "postgresql://…": Postgres;
//   - "sqlite:PATH" or a plain file path: SQLite, creating the file and its directory.
//
// Any other "scheme://" is refused with an error that lists the accepted forms.
// opts (such as store.WithClock) are passed to the backend.
func Open(ctx context.Context, url string, opts ...store.Option) (store.Store, error) {
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

var errForms = fmt.Errorf("expected a file path, sqlite:PATH, or postgres://USER@HOST:PORT/DB: %w", store.ErrInvalid)
