package sqlite

import (
	"testing"
	"time"
)

func TestNullTimes(t *testing.T) {
	if fmtNullTime(time.Time{}) != nil {
		t.Fatal("the zero time is not NULL")
	}
	at := time.Date(2026, 11, 30, 13, 0, 0, 123456789, time.FixedZone("CET", 3600))
	s := fmtNullTime(at)
	if s == nil || *s != "2026-11-30T12:00:00.123456000Z" {
		t.Fatalf("fmtNullTime = %v", s)
	}
	back, err := parseNullTime(s)
	if err != nil || back != time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC) {
		t.Fatalf("parseNullTime = %v, %v", back, err)
	}
	if z, err := parseNullTime(nil); err != nil || !z.IsZero() {
		t.Fatalf("NULL reads %v, %v; want the zero time", z, err)
	}
	if _, err := parseTime("yesterday"); err == nil {
		t.Fatal("a bad timestamp parsed")
	}
	if got, err := parseTime("2026-11-30T12:00:00.5Z"); err != nil || got.Nanosecond() != 5e8 {
		t.Fatalf("plain RFC 3339 reads %v, %v", got, err)
	}
}
