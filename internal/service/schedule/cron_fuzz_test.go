package schedule

import (
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks"
)

// FuzzParse: whatever expression and zone it is given, parse never panics,
// refuses with a FieldError naming cron or time_zone, or reads a schedule
// whose slots move forward: next(t) is after t, and latest(after, now) is a
// slot in (after, now] or none exactly when next(after) is past now.
func FuzzParse(f *testing.F) {
	for _, s := range []struct{ expr, zone string }{
		{"*/5 * * * *", ""}, {"0 2 * * *", "Europe/Berlin"}, {"@every 30s", "UTC"}, {"@hourly", "America/New_York"},
		{"0 0 30 2 *", ""}, {"61 * * * *", ""}, {"@every 0s", ""}, {"CRON_TZ=Asia/Tokyo 0 2 * * *", ""}, {"* * * * *", "Mars/Olympus"},
		{"30 1 * 3 0", "Europe/London"}, {"@every 1h30m", ""}, {"0 0 1 1 *", "Pacific/Kiritimati"},
	} {
		f.Add(s.expr, s.zone, int64(0), int64(3600))
	}
	base := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC) // a night a clock changes in Europe
	f.Fuzz(func(t *testing.T, expr, zone string, afterS, spanS int64) {
		w, err := parse(expr, zone)
		if err != nil {
			fe, ok := errors.AsType[*cks.FieldError](err)
			if !ok || (fe.Field != "cron" && fe.Field != "time_zone") {
				t.Fatalf("parse(%q, %q): %v; want a FieldError naming cron or time_zone", expr, zone, err)
			}
			return
		}
		after := base.Add(time.Duration(afterS%(400*24*3600)) * time.Second)
		now := after.Add(time.Duration(spanS%(40*24*3600)) * time.Second)
		if n := w.next(after); !n.IsZero() && !n.After(after) {
			t.Fatalf("%q in %q: next(%s) = %s, not after it", expr, zone, after, n)
		}
		got := w.latest(after, now)
		first := w.next(after)
		switch {
		case first.IsZero() || first.After(now):
			if !got.IsZero() {
				t.Fatalf("%q in %q: latest(%s, %s) = %s, but the first slot after is %s", expr, zone, after, now, got, first)
			}
		case got.IsZero() || !got.After(after) || got.After(now):
			t.Fatalf("%q in %q: latest(%s, %s) = %s, not a slot in between (first %s)", expr, zone, after, now, got, first)
		default:
			if n := w.next(got); !n.IsZero() && !n.After(now) {
				t.Fatalf("%q in %q: latest(%s, %s) = %s, but %s is a later slot by then", expr, zone, after, now, got, n)
			}
		}
	})
}
