package postgres

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cks-dev/cks/internal/driver"
)

// Times go in and come out as driver.Time (UTC, microseconds: timestamptz's
// precision); a nullable column's NULL is the zero time. The queries read
// and write a nullable time as a pgtype.Timestamptz, a value: pgx scans one
// without allocating (sqlc.yaml).

// nullTime maps the zero time to NULL.
func nullTime(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: driver.Time(t), Valid: true}
}

// fromNullTime reads a nullable time, NULL as the zero time.
func fromNullTime(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return driver.Time(t.Time)
}
