// Package cks holds what crosses the wire between a cks hub and its
// callers: the records and views the hub answers (tasks and their events,
// evidence, decisions and aborts; knowledge objects, versions and edges;
// processes, sweepers, principals and grants), the input and output of every
// operation, the twelve task states, the sentinel errors and FieldError, the
// error body of the API with its codes, and the routes of the operations, so
// that a Go program can call a hub (package client) without linking the
// server.
//
// It imports only the standard library. Nothing here has behaviour beyond a
// type's own contract: the validation of an input (NewTask.Validate,
// TaskPatch.Validate, …, with the text rules both backends share) and the
// encoding of an input onto its HTTP route (Request). The rules of the
// services (transitions, leases, permissions) live in their packages — the
// ledger's transition table and state sets in package ledger, the
// operations' calls in package ops — which use these types.
package cks

import (
	"errors"
	"fmt"
)

// Sentinel errors that callers handle. Services and backends wrap them
// with %w.
var (
	// ErrNotFound means the addressed record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict means the write contradicts the current state of the record.
	ErrConflict = errors.New("conflict")
	// ErrInvalid means the input was rejected before anything was written.
	ErrInvalid = errors.New("invalid input")
	// ErrUnavailable means the storage could not take a request, through no
	// fault of the request; nothing was written. ErrStorageReadOnly and
	// ErrStorageFull match it (the API answers 503).
	ErrUnavailable = errors.New("storage_unavailable: the database cannot take the request")
	// ErrStorageReadOnly means the database refuses writes: a database file,
	// directory or file system this process may not write, a Postgres server
	// that is a hot standby or has default_transaction_read_only set.
	ErrStorageReadOnly error = &unavailableError{"storage_read_only: the database refuses writes"}
	// ErrStorageFull means a write failed for lack of space: a full disk
	// (SQLite SQLITE_FULL, Postgres disk_full, SQLSTATE 53100) or a size cap.
	ErrStorageFull error = &unavailableError{"storage_full: no space left for the write"}
	// ErrStorageUnreachable means the database could not be reached: the
	// connection was refused, broken or timed out, or the server is
	// shutting down or starting (a Postgres restart). Like ErrUnavailable
	// it is no fault of the request (the API answers 503 with Retry-After),
	// but it does not match ErrUnavailable: it passes within seconds, so a
	// writer tries again, where a read-only or full database is an answer.
	// A write cut off by it may or may not have committed.
	ErrStorageUnreachable = errors.New("storage_unavailable: the database cannot be reached")
	// ErrLeaseLost means an executor call carried a lease token that is no
	// longer current: the task was reclaimed, cancelled, parked or completed
	// since the token was issued. It wraps ErrConflict, so errors.Is(err,
	// ErrConflict) also holds; test for ErrLeaseLost first when the
	// difference matters.
	ErrLeaseLost = fmt.Errorf("lease lost: %w", ErrConflict)
)

// unavailableError is a sentinel that also matches ErrUnavailable.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string { return e.msg }
func (e *unavailableError) Unwrap() error { return ErrUnavailable }

// FieldError is an ErrInvalid that names the offending field and what was expected.
type FieldError struct {
	Field    string
	Expected string
}

func (e *FieldError) Error() string {
	return "invalid " + e.Field + ": expected " + e.Expected
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// IsFieldError reports whether err is a FieldError naming field.
func IsFieldError(err error, field string) bool {
	var fe *FieldError
	return errors.As(err, &fe) && fe.Field == field
}

func fieldError(field, expected string) error {
	return &FieldError{Field: field, Expected: expected}
}
