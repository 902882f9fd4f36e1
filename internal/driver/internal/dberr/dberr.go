// Package dberr turns a dialect's errors into the driver's, alike in every
// dialect: each driver only tells which Kind an error of its database is
// (SQLSTATE, SQLite result codes), and Map wraps it the one way the
// services above rely on.
package dberr

import (
	"errors"
	"fmt"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// Kind is what a database error means to the driver.
type Kind int

// The kinds.
const (
	// Other is any other error: wrapped, named, passed on.
	Other Kind = iota
	// NoRows: a read of one row found none.
	NoRows
	// Unique: an insert or update broke a unique index or primary key.
	Unique
	// ReadOnly: the database refuses writes.
	ReadOnly
	// Full: the storage has no room for the write.
	Full
	// Unreachable: the database could not be reached (a refused or broken
	// connection, a server shutting down or starting).
	Unreachable
)

// Map wraps err, the error of step what of dialect's driver, of kind k: no
// rows is driver.ErrNoRows; a unique failure wraps
// driver.ErrUniqueViolation and still the database's error (a caller may
// look at it: WithTx sees a deadlock through it); a refused write or a full
// storage is the storage fault cks.ErrStorageReadOnly or
// cks.ErrStorageFull; an unreachable database cks.ErrStorageUnreachable;
// an error mapped already keeps its storage fault.
// nil stays nil.
func Map(dialect, what string, err error, k Kind) error {
	switch {
	case err == nil:
		return nil
	case k == NoRows:
		return fmt.Errorf("%s: %s: %w", dialect, what, driver.ErrNoRows)
	case k == Unique:
		return fmt.Errorf("%s: %s: %w: %w", dialect, what, driver.ErrUniqueViolation, err)
	case errors.Is(err, cks.ErrUnavailable), errors.Is(err, cks.ErrStorageUnreachable): // mapped already
		return fmt.Errorf("%s: %s: %w", dialect, what, err)
	case k == ReadOnly:
		return driver.StorageFault(cks.ErrStorageReadOnly, fmt.Errorf("%s: %s: %w", dialect, what, err))
	case k == Full:
		return driver.StorageFault(cks.ErrStorageFull, fmt.Errorf("%s: %s: %w", dialect, what, err))
	case k == Unreachable:
		return driver.StorageFault(cks.ErrStorageUnreachable, fmt.Errorf("%s: %s: %w", dialect, what, err))
	}
	return fmt.Errorf("%s: %s: %w", dialect, what, err)
}
