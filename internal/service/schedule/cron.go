package schedule

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // every IANA zone, whatever the host has installed

	"github.com/cks-dev/cks"
	"github.com/robfig/cron/v3"
)

// parser reads the expressions a schedule takes: five fields (minute hour
// day-of-month month day-of-week), the descriptors (@yearly, @monthly,
// @weekly, @daily, @midnight, @hourly) and intervals (@every 30s): the
// syntax of robfig/cron, the library that reads them.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// MinInterval is the shortest @every interval a schedule takes.
const MinInterval = time.Second

// expectedCron is what a refused cron expression was expected to be.
const expectedCron = `a cron expression: five fields (minute hour day-of-month month day-of-week, such as "*/5 * * * *"), ` +
	`a descriptor (@hourly, @daily, @weekly, @monthly, @yearly) or an interval of at least 1s ("@every 30s")`

// when is a parsed schedule: its expression read in its zone.
type when struct {
	sched cron.Schedule
	loc   *time.Location
	// every is the interval of an @every expression (0 for the others):
	// its slots are the whole multiples of it (time.Truncate's, from
	// year 1), so that every hub computes the same slots from the clock
	// alone — @every 30s fires at :00 and :30 of each minute.
	every time.Duration
}

// parse reads expr in zone, or returns a FieldError naming cron or
// time_zone. An expression that never fires (Feb 30) is refused too.
func parse(expr, zone string) (when, error) {
	loc, err := location(zone)
	if err != nil {
		return when{}, err
	}
	if err := cks.ValidateText("cron", expr); err != nil {
		return when{}, err
	}
	expr = strings.TrimSpace(expr)
	bad := &cks.FieldError{Field: "cron", Expected: fmt.Sprintf("%s, got %q", expectedCron, expr)}
	// robfig/cron reads a zone prefix in the expression itself; a
	// schedule's zone is its own field, so there is one place to read it.
	if len(expr) > cks.MaxCronLen || strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=") {
		return when{}, bad
	}
	w := when{loc: loc}
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		// The library rounds an interval below a second up to one; the
		// bound is stated, not rounded.
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil || d < MinInterval {
			return when{}, bad
		}
		w.every = d.Truncate(time.Second)
	}
	if w.sched, err = parser.Parse(expr); err != nil {
		return when{}, bad
	}
	if w.next(time.Now()).IsZero() {
		return when{}, &cks.FieldError{Field: "cron", Expected: fmt.Sprintf("an expression that fires (%q matches no date)", expr)}
	}
	return w, nil
}

// location is the IANA zone name, "" for UTC, or a FieldError naming
// time_zone. "Local" is refused: what it means depends on the host.
func location(zone string) (*time.Location, error) {
	if zone == "" {
		return time.UTC, nil
	}
	bad := &cks.FieldError{Field: "time_zone", Expected: fmt.Sprintf(`an IANA time zone such as "Europe/Berlin" or "UTC", got %q`, zone)}
	if len(zone) > cks.MaxTimeZoneLen || zone == "Local" {
		return nil, bad
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, bad
	}
	return loc, nil
}

// ValidateCron reports a FieldError naming cron unless expr is an
// expression a schedule takes (the rule create_schedule's input states).
func ValidateCron(expr string) error {
	_, err := parse(expr, "")
	return err
}

// ValidateTimeZone reports a FieldError naming time_zone unless zone is an
// IANA time zone ("" is UTC).
func ValidateTimeZone(zone string) error {
	_, err := location(zone)
	return err
}

// next is the first slot after t, in UTC; zero when there is none (within
// the library's five years).
func (w when) next(t time.Time) time.Time {
	if w.every > 0 {
		return t.UTC().Truncate(w.every).Add(w.every)
	}
	n := w.sched.Next(t.In(w.loc))
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// nextN is the n slots after t.
func (w when) nextN(t time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	for len(out) < n {
		t = w.next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// lookBack are the windows latest searches, shortest first: the slot
// before now is found in the first that holds one, so the forward walk
// from its start crosses few slots.
var lookBack = []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 31 * 24 * time.Hour, 366 * 24 * time.Hour, 5 * 366 * 24 * time.Hour}

// latest is the latest slot s with after < s <= now, zero when there is
// none.
func (w when) latest(after, now time.Time) time.Time {
	first := w.next(after)
	if first.IsZero() || first.After(now) {
		return time.Time{}
	}
	if w.every > 0 {
		return now.UTC().Truncate(w.every)
	}
	for _, back := range lookBack {
		from := now.Add(-back)
		if !from.After(after) {
			return w.walk(after, now)
		}
		if s := w.next(from); !s.IsZero() && !s.After(now) {
			return w.walk(from, now)
		}
	}
	return w.walk(now.Add(-lookBack[len(lookBack)-1]), now)
}

// walk steps from after to the last slot at or before now (zero for none).
func (w when) walk(after, now time.Time) time.Time {
	var last time.Time
	for s := w.next(after); !s.IsZero() && !s.After(now); s = w.next(s) {
		last = s
	}
	return last
}
