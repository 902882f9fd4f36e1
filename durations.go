package cks

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a duration setting the one way every duration
// variable and flag of cks is read (the agents' intervals, the hub's
// CKS_STALE_WINDOW, CKS_LEADER_TTL, the sweepers' intervals, the retry
// backoff): a number of seconds ("30", "0.5") or a Go duration ("30s",
// "1m30s", "500ms"), surrounding blanks ignored. A negative value, NaN, or
// one past what a time.Duration holds is an error saying which forms are
// accepted; zero is returned as it is, for the caller to refuse where a
// setting must be positive.
func ParseDuration(in string) (time.Duration, error) {
	v := strings.TrimSpace(in)
	var d time.Duration
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		ns := f * float64(time.Second)
		if math.IsNaN(ns) || ns >= math.MaxInt64 || ns < 0 {
			return 0, fmt.Errorf("%q: expected a non-negative number of seconds (e.g. 30 or 0.5) within %s, or a duration (e.g. 30s, 5m)", in, time.Duration(math.MaxInt64))
		}
		d = time.Duration(ns)
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, fmt.Errorf("%q: expected seconds (e.g. 30 or 0.5) or a duration (e.g. 30s, 5m)", in)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q: expected a non-negative number of seconds or duration (e.g. 30, 30s)", in)
	}
	return d, nil
}

// FormatDuration writes d as a person would: 10m, 1h30m, 45s, 1.5s (Go's
// time.Duration.String without its trailing zero units, 10m0s → 10m).
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
