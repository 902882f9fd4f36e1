package sqlite

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/store"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// mapErr is the one place where SQLite's errors become the driver's: every
// primitive and transaction step passes its error through it. what names the
// step. No rows is driver.ErrNoRows; a UNIQUE or PRIMARY KEY failure wraps
// driver.ErrUniqueViolation (and still the SQLite error); a database that
// refuses writes (SQLITE_READONLY: a file, directory or file system this
// process may not write) is store.ErrStorageReadOnly, one without space
// (SQLITE_FULL, a full disk or max_page_count) store.ErrStorageFull, both
// matching store.ErrUnavailable. nil stays nil.
func mapErr(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqlite: %s: %w", what, driver.ErrNoRows)
	case code(err) == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code(err) == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return fmt.Errorf("sqlite: %s: %w: %w", what, driver.ErrUniqueViolation, err)
	case errors.Is(err, store.ErrUnavailable):
		return fmt.Errorf("sqlite: %s: %w", what, err) // classified already
	case code(err)&0xff == sqlite3.SQLITE_READONLY:
		return store.StorageFault(store.ErrStorageReadOnly, fmt.Errorf("sqlite: %s: %w", what, err))
	case code(err)&0xff == sqlite3.SQLITE_FULL:
		return store.StorageFault(store.ErrStorageFull, fmt.Errorf("sqlite: %s: %w", what, err))
	}
	return fmt.Errorf("sqlite: %s: %w", what, err)
}

// code returns the extended result code of a SQLite error, or 0.
func code(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

// isBusy reports whether err is SQLITE_BUSY (another connection holds the
// lock), in any of its extended forms.
func isBusy(err error) bool { return code(err)&0xff == sqlite3.SQLITE_BUSY }
