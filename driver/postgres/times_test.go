package postgres

import (
	"testing"
	"time"
)

func TestNullTimes(t *testing.T) {
	if nullTime(time.Time{}) != nil {
		t.Fatal("the zero time is not NULL")
	}
	at := time.Date(2026, 11, 30, 13, 0, 0, 123456789, time.FixedZone("CET", 3600))
	want := time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC)
	if p := nullTime(at); p == nil || *p != want {
		t.Fatalf("nullTime = %v, want %v", p, want)
	}
	if got := fromNullTime(&at); got != want {
		t.Fatalf("fromNullTime = %v, want %v", got, want)
	}
	if got := fromNullTime(nil); !got.IsZero() {
		t.Fatalf("NULL reads %v, want the zero time", got)
	}
}
