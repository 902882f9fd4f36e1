package postgres

import (
	"errors"
	"fmt"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// mapErr is the one place where Postgres' errors become the driver's: every
// primitive and transaction step passes its error through it. what names the
// step. No rows is driver.ErrNoRows; a UNIQUE or PRIMARY KEY failure (23505)
// wraps driver.ErrUniqueViolation; a server that runs the transaction
// read-only (read_only_sql_transaction, 25006: a hot standby,
// default_transaction_read_only) is store.ErrStorageReadOnly, one without
// space (disk_full, 53100) store.ErrStorageFull, both matching
// store.ErrUnavailable. The pgx error stays in the chain, so WithTx still
// sees a deadlock through it. nil stays nil.
func mapErr(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("postgres: %s: %w", what, driver.ErrNoRows)
	case sqlState(err) == "23505":
		return fmt.Errorf("postgres: %s: %w: %w", what, driver.ErrUniqueViolation, err)
	case errors.Is(err, store.ErrUnavailable):
		return fmt.Errorf("postgres: %s: %w", what, err) // classified already
	case sqlState(err) == "25006":
		return store.StorageFault(store.ErrStorageReadOnly, fmt.Errorf("postgres: %s: %w", what, err))
	case sqlState(err) == "53100":
		return store.StorageFault(store.ErrStorageFull, fmt.Errorf("postgres: %s: %w", what, err))
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}

// sqlState returns the SQLSTATE of a Postgres error, or "".
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// retryable reports whether err aborted a transaction that may succeed when
// run again: deadlock_detected (40P01) or serialization_failure (40001).
func retryable(err error) bool {
	s := sqlState(err)
	return s == "40P01" || s == "40001"
}
