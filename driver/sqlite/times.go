package sqlite

import (
	"fmt"
	"time"

	"github.com/cks-dev/cks/store"
)

// timeFormat is fixed-width so that string order equals time order.
// time.RFC3339Nano trims trailing zeros and would break that.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

// fmtTime renders t in the fixed-width UTC format, at microsecond precision
// (store.Time) like the Postgres driver.
func fmtTime(t time.Time) string { return store.Time(t).Format(timeFormat) }

// fmtNullTime is fmtTime of a nullable column: the zero time is NULL.
func fmtNullTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := fmtTime(t)
	return &s
}

// parseTime reads a timestamp written by fmtTime.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeFormat, s)
	if err != nil {
		// Tolerate rows written by other tools in plain RFC 3339.
		if t2, err2 := time.Parse(time.RFC3339Nano, s); err2 == nil {
			return store.Time(t2), nil
		}
		return time.Time{}, fmt.Errorf("sqlite: bad timestamp %q: %w", s, err)
	}
	return t, nil
}

// parseNullTime is parseTime of a nullable column: NULL is the zero time.
func parseNullTime(s *string) (time.Time, error) {
	if s == nil {
		return time.Time{}, nil
	}
	return parseTime(*s)
}
