package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// TestMapErr: the SQLSTATEs the driver names become its errors and the
// store's storage faults, wrapped so that the Postgres error stays in the
// chain; a disk_full cannot be provoked in a test, so the mapping is
// checked on the error itself.
func TestMapErr(t *testing.T) {
	for _, c := range []struct {
		err  error
		want []error
		not  []error
	}{
		{pgx.ErrNoRows, []error{driver.ErrNoRows}, []error{cks.ErrUnavailable}},
		{&pgconn.PgError{Code: "23505"}, []error{driver.ErrUniqueViolation}, []error{cks.ErrUnavailable}},
		{&pgconn.PgError{Code: "25006"}, []error{cks.ErrStorageReadOnly, cks.ErrUnavailable}, []error{cks.ErrStorageFull}},
		{&pgconn.PgError{Code: "53100"}, []error{cks.ErrStorageFull, cks.ErrUnavailable}, []error{cks.ErrStorageReadOnly}},
		{fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "53100"}), []error{cks.ErrStorageFull}, nil},
		{&pgconn.PgError{Code: "40P01"}, nil, []error{cks.ErrUnavailable, driver.ErrNoRows, cks.ErrStorageUnreachable}},
		// The database unreachable (issue 38.9): not ErrUnavailable (a
		// writer retries it), but ErrStorageUnreachable (503).
		{&pgconn.PgError{Code: "57P01"}, []error{cks.ErrStorageUnreachable}, []error{cks.ErrUnavailable}},
		{&pgconn.PgError{Code: "57P03"}, []error{cks.ErrStorageUnreachable}, []error{cks.ErrUnavailable}},
		{&pgconn.PgError{Code: "08006"}, []error{cks.ErrStorageUnreachable}, []error{cks.ErrUnavailable}},
		{&pgconn.PgError{Code: "42P01"}, nil, []error{cks.ErrStorageUnreachable}},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), []error{cks.ErrStorageUnreachable}, []error{cks.ErrUnavailable}},
		{pgconn.ErrConnClosed, []error{cks.ErrStorageUnreachable}, nil},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, []error{cks.ErrStorageUnreachable}, nil},
		{fmt.Errorf("write: %w", syscall.EPIPE), []error{cks.ErrStorageUnreachable}, nil},
		{context.DeadlineExceeded, nil, []error{cks.ErrStorageUnreachable}},
		{fmt.Errorf("timeout: %w", context.Canceled), nil, []error{cks.ErrStorageUnreachable}},
	} {
		got := mapErr("step", c.err)
		for _, w := range c.want {
			if !errors.Is(got, w) {
				t.Errorf("mapErr(%v) = %v, want it to match %v", c.err, got, w)
			}
		}
		for _, n := range c.not {
			if errors.Is(got, n) {
				t.Errorf("mapErr(%v) = %v, matches %v", c.err, got, n)
			}
		}
		var pgErr *pgconn.PgError
		if _, ok := c.err.(*pgconn.PgError); ok && !errors.As(got, &pgErr) {
			t.Errorf("mapErr(%v) = %v lost the Postgres error", c.err, got)
		}
		for _, w := range c.want {
			if again := mapErr("outer", got); !errors.Is(again, w) {
				t.Errorf("mapErr twice of %v = %v, want it to match %v", c.err, again, w)
			}
		}
	}
}
