package postgres

import (
	"time"

	"github.com/cks-dev/cks/driver"
)

// Times go in and come out as driver.Time (UTC, microseconds: timestamptz's
// precision); a nullable column's NULL is the zero time.

// nullTime maps the zero time to NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = driver.Time(t)
	return &t
}

// fromNullTime reads a nullable time, NULL as the zero time.
func fromNullTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return driver.Time(*t)
}
