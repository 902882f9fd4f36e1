package postgres

import (
	"time"

	"github.com/cks-dev/cks/store"
)

// Times go in and come out as store.Time (UTC, microseconds: timestamptz's
// precision); a nullable column's NULL is the zero time.

// nullTime maps the zero time to NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = store.Time(t)
	return &t
}

// fromNullTime reads a nullable time, NULL as the zero time.
func fromNullTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return store.Time(*t)
}

// nullString maps "" to NULL.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nullInt maps 0 to NULL.
func nullInt(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

// deref reads a nullable value, NULL as the zero value.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
