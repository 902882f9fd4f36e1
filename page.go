package cks

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxPageBytes bounds what one page of a listing holds, by the size of its
// rows in the answer, as well as by their count (the filter's limit): a
// page of a thousand of the largest tasks a client may create would be
// about a gigabyte. A page stops before the row that would take it past
// the bound, so it answers at most MaxPageBytes plus one row; its next
// cursor goes on from there, and a listing reads every row as before.
const MaxPageBytes = 4 << 20

// PageBudget decides, row by row in a listing's order, which rows one page
// holds: rows while their sizes add up to at most MaxPageBytes, and always
// the first (a page makes progress whatever its rows' sizes). The zero
// value is an empty page.
type PageBudget struct{ used, rows int }

// Fits reports whether the page holds the next row, of size bytes in the
// answer, and counts it when it does. Once a row does not fit, the page
// ends before it: its next cursor is the last row that fit.
func (b *PageBudget) Fits(size int) bool {
	if b.rows > 0 && b.used+size > MaxPageBytes {
		return false
	}
	b.used += size
	b.rows++
	return true
}

// EncodedLen is the length of s as a JSON string in an answer, without
// its quotes: a control character is escaped (\n in two bytes, others in
// six, an upper bound for \b and \f), as are " and \ (two) and U+2028
// and U+2029 (six, for JavaScript); other UTF-8 is written as it is.
func EncodedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20:
			n += 5
		case c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9):
			n += 3
		}
	}
	return n
}

// TimeCursor is where a page of a listing ordered by a time, newest
// first, and then an id goes on from: the last row of the previous page.
type TimeCursor struct {
	At time.Time
	ID string
}

// String is the cursor as a listing answers it in next_cursor: the time in
// Unix microseconds (the precision both backends store), a dot, the id.
func (c TimeCursor) String() string {
	return strconv.FormatInt(c.At.UnixMicro(), 10) + "." + c.ID
}

// ParseTimeCursor reads a cursor String wrote; "" is the first page (a
// zero cursor). Anything else is a FieldError naming cursor.
func ParseTimeCursor(s string) (TimeCursor, error) {
	if s == "" {
		return TimeCursor{}, nil
	}
	us, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || id == "" || ValidateText("cursor", id) != nil {
		return TimeCursor{}, fieldError("cursor", "the next_cursor of a previous page")
	}
	return TimeCursor{At: time.UnixMicro(n).UTC(), ID: id}, nil
}

// PageLimit is the page size a listing's limit asks for: limit when it is
// 1 to MaxListLimit, DefaultListLimit for 0, and otherwise a FieldError
// naming limit.
func PageLimit(limit int) (int, error) {
	switch {
	case limit < 0 || limit > MaxListLimit:
		return 0, fieldError("limit", fmt.Sprintf("an integer from 1 to %d (0 for the default %d)", MaxListLimit, DefaultListLimit))
	case limit == 0:
		return DefaultListLimit, nil
	}
	return limit, nil
}
