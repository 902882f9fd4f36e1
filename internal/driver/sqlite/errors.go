package sqlite

import (
	"database/sql"
	"errors"

	"github.com/cks-dev/cks/internal/driver/internal/dberr"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// mapErr is the one place where SQLite's errors become the driver's: every
// primitive and transaction step passes its error through it (what names the
// step), and dberr.Map wraps it by its kind: database/sql's no rows; a
// UNIQUE or PRIMARY KEY failure; a write the file refuses (SQLITE_READONLY:
// a file, directory or file system this process may not write) or has no
// room for (SQLITE_FULL: a full disk, or a cap).
func mapErr(what string, err error) error { return dberr.Map("sqlite", what, err, kind(err)) }

// kind is what a SQLite error means to the driver.
func kind(err error) dberr.Kind {
	switch c := code(err); {
	case errors.Is(err, sql.ErrNoRows):
		return dberr.NoRows
	case c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return dberr.Unique
	case c&0xff == sqlite3.SQLITE_READONLY:
		return dberr.ReadOnly
	case c&0xff == sqlite3.SQLITE_FULL:
		return dberr.Full
	}
	return dberr.Other
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
