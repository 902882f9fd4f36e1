package drivertest

import (
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

// Times checks the time mapping of every driver: a time goes in in any
// location and with any precision, and comes out in UTC at microsecond
// precision (driver.Time), ordered by the instant at that precision.
func Times(t *testing.T, newDB NewDB) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		in := time.Date(2026, 11, 30, 13, 0, 0, 123456789, time.FixedZone("CET", 3600))
		r := row("i-1", "agent", 0)
		r.StartedAt, r.LastHeartbeatAt = in, in.Add(999*time.Nanosecond)
		must(t, "upsert", ErrOnly(ex.LivenessUpsert(ctx, r)))
		got, err := ex.LivenessGet(ctx, "i-1")
		must(t, "get", err)
		want := time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC)
		if got.StartedAt != want || got.LastHeartbeatAt != want.Add(time.Microsecond) {
			t.Fatalf("times read %v, %v; want %v and %v (UTC, microseconds)",
				got.StartedAt, got.LastHeartbeatAt, want, want.Add(time.Microsecond))
		}
	})
	// A nullable time column: the zero time is stored as NULL and NULL
	// reads as the zero time; another time as in RoundTrip. Inserted one row
	// a call and both in one (a driver may write one row and many
	// differently).
	t.Run("Nullable", func(t *testing.T) {
		t.Parallel()
		d, db := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		in := time.Date(2026, 11, 30, 13, 0, 0, 123456789, time.FixedZone("CET", 3600))
		unset, set := task("nullable", "OPEN"), task("nullable", "CLAIMED")
		set.ClaimedAt = in
		var stored []driver.TaskRow
		for _, rows := range [][]driver.TaskRow{{unset}, {set}, {unset, set}} {
			got, err := ex.TaskInsertMany(ctx, rows)
			must(t, "insert", err)
			stored = append(stored, got...)
		}
		exec(t, db, "UPDATE cks_outbox_tasks SET title = 'claimed_at is NULL' WHERE claimed_at IS NULL")
		want := time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC)
		for i, id := range ids(stored) {
			got := get(t, ex, id)
			if i%2 == 0 && (!got.ClaimedAt.IsZero() || got.Title != "claimed_at is NULL") {
				t.Errorf("task %d: the zero time read %v, title %q; want it stored as NULL and read as the zero time", id, got.ClaimedAt, got.Title)
			}
			if i%2 == 1 && (got.ClaimedAt != want || got.Title == "claimed_at is NULL") {
				t.Errorf("task %d: a nullable time read %v (title %q), want %v, not NULL", id, got.ClaimedAt, got.Title, want)
			}
		}
	})
	t.Run("OrderedByInstant", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		for i, at := range []time.Time{T0.Add(time.Microsecond), T0.Add(10 * time.Second), T0.Add(2 * time.Microsecond), T0} {
			r := row(string(rune('a'+i)), "agent", 0)
			r.StartedAt = at
			must(t, "upsert", ErrOnly(ex.LivenessUpsert(ctx, r)))
		}
		all, err := ex.LivenessList(ctx)
		must(t, "list", err)
		if ids := livenessIDs(all); ids != "b c a d" {
			t.Fatalf("newest first: %q, want b c a d", ids)
		}
	})
}
