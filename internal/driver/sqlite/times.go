package sqlite

import (
	"fmt"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

// timeFormat is fixed-width so that string order equals time order.
// time.RFC3339Nano trims trailing zeros and would break that.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

// fmtTime renders t in the fixed-width UTC format, at microsecond precision
// (driver.Time) like the Postgres driver. It writes the digits itself: every
// time column of every write is formatted on the one writer, where
// time.Format's layout interpreter was 7 % of the writer's time under load
// (bench ledger); a year that does not fit in four digits goes through
// time.Format, as before.
func fmtTime(t time.Time) string {
	t = driver.Time(t)
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(timeFormat)
	}
	hour, minute, sec := t.Clock()
	var b [len(timeFormat)]byte
	copy(b[:], timeFormat)
	putDigits(b[0:4], year)
	putDigits(b[5:7], int(month))
	putDigits(b[8:10], day)
	putDigits(b[11:13], hour)
	putDigits(b[14:16], minute)
	putDigits(b[17:19], sec)
	putDigits(b[20:29], t.Nanosecond())
	return string(b[:])
}

// putDigits writes v into b in decimal, zero-padded to len(b).
func putDigits(b []byte, v int) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

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
	if t, ok := parseFixed(s); ok {
		return t, nil
	}
	t, err := time.Parse(timeFormat, s)
	if err != nil {
		// Tolerate rows written by other tools in plain RFC 3339.
		if t2, err2 := time.Parse(time.RFC3339Nano, s); err2 == nil {
			return driver.Time(t2), nil
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

// parseFixed reads s in timeFormat by hand, as time.Parse(timeFormat, s)
// would (every time column of every row read is parsed). It reports false
// for anything else, a day past its month's end included, and parseTime
// then takes time.Parse's path and its error.
func parseFixed(s string) (time.Time, bool) {
	if len(s) != len(timeFormat) {
		return time.Time{}, false
	}
	for i := range len(timeFormat) {
		if c := timeFormat[i]; c < '0' || c > '9' {
			if s[i] != c {
				return time.Time{}, false
			}
		} else if s[i] < '0' || s[i] > '9' {
			return time.Time{}, false
		}
	}
	num := func(from, to int) int {
		v := 0
		for _, c := range []byte(s[from:to]) {
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	hour, minute, sec := num(11, 13), num(14, 16), num(17, 19)
	if month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, num(20, 29), time.UTC)
	if t.Day() != day { // past the month's end: time.Date moved it on
		return time.Time{}, false
	}
	return t, true
}

// timeTexts remembers the text of the last few times a write transaction
// formatted. The rows of one batch share their times — a flush's moves
// are all made now, a claim's leases all start then, an enqueue's tasks
// are all created at one time — and each was formatted, and its text and
// pointer allocated, once a column a row: six times a move.
type timeTexts struct {
	at   [4]time.Time
	text [4]*string
	next int
}

// of is fmtNullTime(t), the text shared with the times equal to t
// formatted before it (equal instants have one text: UTC, microseconds).
func (c *timeTexts) of(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	for i, at := range c.at {
		if c.text[i] != nil && at.Equal(t) {
			return c.text[i]
		}
	}
	s := fmtTime(t)
	c.at[c.next], c.text[c.next] = t, &s
	c.next = (c.next + 1) % len(c.at)
	return &s
}

// nonNull is fmtTime(t) through the texts of c.
func (c *timeTexts) nonNull(t time.Time) string {
	if t.IsZero() {
		return fmtTime(t)
	}
	return *c.of(t)
}
