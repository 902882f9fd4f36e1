package cks_test

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
)

// TestParseDuration: every duration setting of cks reads seconds or a Go
// duration alike (issue 39: CKS_STALE_WINDOW=30 was refused where every
// agent interval took 30).
func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "30", want: 30 * time.Second},
		{in: "0.5", want: 500 * time.Millisecond},
		{in: " 30 ", want: 30 * time.Second},
		{in: "30s", want: 30 * time.Second},
		{in: "1m30s", want: 90 * time.Second},
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "0", want: 0},
		{in: "0s", want: 0},
		{in: "-1", bad: true},
		{in: "-1m", bad: true},
		{in: "1e400", bad: true},
		{in: "NaN", bad: true},
		{in: "9999999999h", bad: true},
		{in: "soon", bad: true},
		{in: "", bad: true},
	} {
		got, err := cks.ParseDuration(c.in)
		switch {
		case c.bad && (err == nil || !strings.Contains(err.Error(), "seconds")):
			t.Errorf("ParseDuration(%q) = %v, %v; want an error saying which forms it takes", c.in, got, err)
		case !c.bad && (err != nil || got != c.want):
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// FuzzParseDuration: what ParseDuration accepts as a number of seconds is
// that many seconds (never a value that overflowed into another sign or
// size), never negative; a Go duration reads as time.ParseDuration reads
// it; nothing else is accepted.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90", "0.5", "90s", "1m30s", "-1", "0", "1e10", "9.2e9", "1e400", "NaN", "Inf", "-Inf", "1e-10", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := cks.ParseDuration(s)
		if err == nil && got < 0 {
			t.Fatalf("ParseDuration(%q) = %v: negative", s, got)
		}
		v := strings.TrimSpace(s)
		secs, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil {
			d, derr := time.ParseDuration(v)
			if (err == nil) != (derr == nil && d >= 0) || (err == nil && got != d) {
				t.Fatalf("ParseDuration(%q) = %v, %v; time.ParseDuration says %v, %v", s, got, err, d, derr)
			}
			return
		}
		if err != nil {
			if !math.IsNaN(secs) && secs >= 0 && secs*float64(time.Second) < math.MaxInt64/2 {
				t.Fatalf("ParseDuration(%q): %v, for a number of seconds a Duration holds", s, err)
			}
			return
		}
		if want := secs * float64(time.Second); math.IsNaN(want) || math.IsInf(want, 0) || math.Abs(float64(got)-want) > math.Max(1, math.Abs(want)*1e-9) {
			t.Fatalf("ParseDuration(%q) = %v (%d ns), want %g ns", s, got, int64(got), want)
		}
	})
}
