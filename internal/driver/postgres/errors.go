package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/cks-dev/cks/internal/driver/internal/dberr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// mapErr is the one place where Postgres' errors become the driver's: every
// primitive and transaction step passes its error through it (what names the
// step), and dberr.Map wraps it by its kind: pgx's no rows; a UNIQUE or
// PRIMARY KEY failure (23505); a write the server refuses
// (read_only_sql_transaction, 25006: a hot standby, or
// default_transaction_read_only set) or has no room for (disk_full, 53100).
// The pgx error stays in the chain, so WithTx still sees a deadlock through
// it.
func mapErr(what string, err error) error { return dberr.Map("postgres", what, err, kind(err)) }

// kind is what a Postgres error means to the driver.
func kind(err error) dberr.Kind {
	if errors.Is(err, pgx.ErrNoRows) {
		return dberr.NoRows
	}
	switch s := sqlState(err); {
	case s == "23505":
		return dberr.Unique
	case s == "25006":
		return dberr.ReadOnly
	case s == "53100":
		return dberr.Full
	case unreachable(err):
		return dberr.Unreachable
	}
	return dberr.Other
}

// unreachable reports whether err says the server could not be reached
// rather than answered: a failed connect, a connection_exception (SQLSTATE
// class 08), a server shutting down or starting (57P01, 57P02, 57P03), or
// a connection closed, reset or refused under the query. An ended context
// is the caller's, not the server's.
func unreachable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	if s := sqlState(err); s != "" {
		return strings.HasPrefix(s, "08") || s == "57P01" || s == "57P02" || s == "57P03"
	}
	for _, e := range []error{pgconn.ErrConnClosed, io.EOF, io.ErrUnexpectedEOF, syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne)
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
