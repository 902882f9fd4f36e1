package sqlite

import (
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
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

// FuzzFmtTime: the hand-written formatter writes what time.Format of the
// layout writes, for any instant (years past 9999 or before 0 included).
func FuzzFmtTime(f *testing.F) {
	f.Add(int64(1796045400), int64(123456789))
	f.Add(int64(0), int64(0))
	f.Add(int64(-62135596800), int64(1))         // year 1
	f.Add(int64(253402300799), int64(999999999)) // the end of 9999
	f.Add(int64(253402300800), int64(0))
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		at := time.Unix(sec, nsec)
		want := at.UTC().Truncate(time.Microsecond).Format(timeFormat)
		if got := fmtTime(at); got != want {
			t.Fatalf("fmtTime(%v) = %q, time.Format %q", at, got, want)
		}
	})
}

// FuzzParseTime: parseTime reads every string as time.Parse of the layout
// does (then plain RFC 3339), the same instant or an error alike, and reads
// back what fmtTime wrote.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-11-30T12:00:00.123456000Z", "2026-02-29T00:00:00.000000000Z",
		"2024-02-29T23:59:59.999999999Z", "0000-01-01T00:00:00.000000000Z", "2026-13-01T00:00:00.000000000Z",
		"2026-11-31T00:00:00.000000000Z", "2026-11-30T24:00:00.000000000Z", "2026-11-30T12:00:60.000000000Z",
		"2026-11-30T12:00:00.5Z", "2026-11-30T12:00:00+01:00", "yesterday", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, werr := time.Parse(timeFormat, s)
		if werr != nil {
			if t2, err2 := time.Parse(time.RFC3339Nano, s); err2 == nil {
				want, werr = t2.UTC().Truncate(time.Microsecond), nil
			}
		}
		got, err := parseTime(s)
		if (err != nil) != (werr != nil) || !got.Equal(want) || got.Location() != want.Location() {
			t.Fatalf("parseTime(%q) = %v, %v; time.Parse %v, %v", s, got, err, want, werr)
		}
		if err == nil && got.Year() >= 0 && got.Year() <= 9999 && len(s) == len(timeFormat) {
			if back, err := parseTime(fmtTime(got)); err != nil || !back.Equal(driver.Time(got)) {
				t.Fatalf("parseTime(fmtTime(%v)) = %v, %v", got, back, err)
			}
		}
	})
}

// TestTimeTexts: the texts a transaction remembers are fmtTime's and
// fmtNullTime's, shared by equal instants whatever their zone, and a
// time pushed out of the few remembered is formatted anew.
func TestTimeTexts(t *testing.T) {
	var c timeTexts
	if c.of(time.Time{}) != nil || c.nonNull(time.Time{}) != fmtTime(time.Time{}) {
		t.Fatal("the zero time is not NULL, or not fmtTime's text")
	}
	base := time.Now() // with a monotonic reading
	for round := range 2 {
		for i := range 6 {
			at := base.Add(time.Duration(i) * 1500 * time.Nanosecond)
			want := fmtTime(at)
			if got := *c.of(at); got != want {
				t.Fatalf("round %d, time %d: %q, want %q", round, i, got, want)
			}
			if got := c.nonNull(at.In(time.FixedZone("x", -3600))); got != want {
				t.Fatalf("round %d, time %d in another zone: %q, want %q", round, i, got, want)
			}
		}
	}
	a := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	if c.of(a) != c.of(a.In(time.Local)) {
		t.Fatal("an equal instant got a text of its own")
	}
}
