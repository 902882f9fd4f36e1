package sqlite

import (
	"testing"
	"time"
)

// TestTimeText: the facts of SQLite's time column text (the NULL and
// precision mapping both dialects share is drivertest.Times): fixed width,
// UTC, microseconds in nine digits, so that text order is time order; a
// bad timestamp is an error; plain RFC 3339 from another tool reads.
func TestTimeText(t *testing.T) {
	at := time.Date(2026, 11, 30, 13, 0, 0, 123456789, time.FixedZone("CET", 3600))
	if s := fmtTime(at); s != "2026-11-30T12:00:00.123456000Z" {
		t.Fatalf("fmtTime = %q", s)
	}
	if _, err := parseTime("yesterday"); err == nil {
		t.Fatal("a bad timestamp parsed")
	}
	if got, err := parseTime("2026-11-30T12:00:00.5Z"); err != nil || got.Nanosecond() != 5e8 {
		t.Fatalf("plain RFC 3339 reads %v, %v", got, err)
	}
}
