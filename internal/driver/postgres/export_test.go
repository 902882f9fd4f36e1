package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/postgres/internal/dbsqlc"
)

// PoolConns returns how many connections d's pool holds.
func PoolConns(d *Driver) int32 { return d.pool.Stat().TotalConns() }

// MapErr is the driver's mapErr, for tests of the errors a test server
// cannot produce (a full disk).
func MapErr(what string, err error) error { return mapErr(what, err) }

// PlansOf reports, for the statements whose text contains name that d's
// pool connections have prepared, how often Postgres planned them generically
// and custom (pg_prepared_statements: a connection sees only its own, so
// open d with one connection).
func PlansOf(ctx context.Context, d *Driver, name string) (generic, custom int64, err error) {
	err = d.pool.QueryRow(ctx, `SELECT coalesce(sum(generic_plans), 0)::bigint, coalesce(sum(custom_plans), 0)::bigint
		FROM pg_prepared_statements WHERE strpos(statement, $1) > 0`, name).Scan(&generic, &custom)
	return generic, custom, err
}

// OpenConfigured is Open with configure applied to the pool's configuration.
func OpenConfigured(ctx context.Context, url string, configure func(*pgxpool.Config)) (*Driver, error) {
	return open(ctx, url, configure)
}

// WithTxDB runs fn in one of d's transactions (WithTx) on the statements'
// dbsqlc.DBTX, for tests of the path a statement takes.
func WithTxDB(ctx context.Context, d *Driver, opts driver.TxOptions, fn func(ctx context.Context, db dbsqlc.DBTX) error) error {
	return d.WithTx(ctx, opts, func(ctx context.Context, ex driver.Executor) error {
		return fn(ctx, ex.(*executor).db)
	})
}
