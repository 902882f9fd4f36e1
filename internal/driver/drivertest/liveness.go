package drivertest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

// row is a liveness row started s seconds after T0.
func row(id, kind string, s int) driver.LivenessRow {
	at := T0.Add(time.Duration(s) * time.Second)
	return driver.LivenessRow{InstanceID: id, ProcessKind: kind, Hostname: "h", PID: 100 + s,
		LivenessIntervalS: 15, StartedAt: at, LastHeartbeatAt: at}
}

// Liveness checks the liveness primitives.
func Liveness(t *testing.T, newDB NewDB) {
	t.Run("UpsertInsertsThenUpdates", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		r := row("i-1", "agent", 0)
		must(t, "insert", ErrOnly(ex.LivenessUpsert(ctx, r)))
		got, err := ex.LivenessGet(ctx, "i-1")
		must(t, "get", err)
		if got != r {
			t.Fatalf("inserted row reads %+v, want %+v", got, r)
		}
		// Every column but started_at and desired_state is updated.
		must(t, "stop", ErrOnly(ex.LivenessSetDesiredState(ctx, "i-1", "stop_requested")))
		u := driver.LivenessRow{InstanceID: "i-1", ProcessKind: "pipeline", Hostname: "h2", PID: 7,
			LivenessIntervalS: 2.5, StartedAt: T0.Add(time.Hour), LastHeartbeatAt: T0.Add(time.Minute),
			CurrentTaskID: 42, CurrentTaskType: "critique", TaskTypes: `["critique","fork"]`}
		must(t, "update", ErrOnly(ex.LivenessUpsert(ctx, u)))
		got, err = ex.LivenessGet(ctx, "i-1")
		must(t, "get", err)
		want := u
		want.StartedAt, want.DesiredState = r.StartedAt, "stop_requested"
		if got != want {
			t.Fatalf("updated row reads %+v, want %+v", got, want)
		}
		// Idle again: 0 and "" are NULL and read back as 0 and "".
		u.CurrentTaskID, u.CurrentTaskType = 0, ""
		must(t, "idle", ErrOnly(ex.LivenessUpsert(ctx, u)))
		if got, _ := ex.LivenessGet(ctx, "i-1"); got.CurrentTaskID != 0 || got.CurrentTaskType != "" || !got.ExitedAt.IsZero() {
			t.Fatalf("idle row reads task %d %q, exited at %v", got.CurrentTaskID, got.CurrentTaskType, got.ExitedAt)
		}
		// The exit is written with the last heartbeat, and read back.
		u.ExitedAt, u.LastHeartbeatAt = T0.Add(2*time.Minute), T0.Add(2*time.Minute)
		must(t, "exit", ErrOnly(ex.LivenessUpsert(ctx, u)))
		if got, _ := ex.LivenessGet(ctx, "i-1"); !got.ExitedAt.Equal(u.ExitedAt) || !got.LastHeartbeatAt.Equal(u.LastHeartbeatAt) {
			t.Fatalf("exited row reads exited %v, heartbeat %v; want both %v", got.ExitedAt, got.LastHeartbeatAt, u.ExitedAt)
		}
	})
	t.Run("UpsertKeepsItsReporter", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		mine := row("i-1", "summarize", 0)
		mine.ReportedBy = "p-1"
		theirs := row("i-2", "agent", 0) // a process on the database
		for _, r := range []driver.LivenessRow{mine, theirs} {
			if wrote, err := ex.LivenessUpsert(ctx, r); err != nil || !wrote {
				t.Fatalf("insert %s = %v, %v", r.InstanceID, wrote, err)
			}
		}
		// Another reporter, or none, leaves a row as it is; its own
		// writes it again.
		for _, c := range []struct {
			id, by string
			wrote  bool
		}{{"i-1", "p-2", false}, {"i-1", "", false}, {"i-2", "p-1", false}, {"i-1", "p-1", true}, {"i-2", "", true}} {
			u := row(c.id, "other", 30)
			u.ReportedBy = c.by
			wrote, err := ex.LivenessUpsert(ctx, u)
			must(t, "upsert", err)
			got, _ := ex.LivenessGet(ctx, c.id)
			if wrote != c.wrote || (got.ProcessKind == "other") != c.wrote {
				t.Fatalf("upsert of %s by %q wrote %v (kind %q), want %v", c.id, c.by, wrote, got.ProcessKind, c.wrote)
			}
			if want := map[string]string{"i-1": "p-1", "i-2": ""}[c.id]; got.ReportedBy != want {
				t.Fatalf("%s reported by %q after an upsert by %q, want %q", c.id, got.ReportedBy, c.by, want)
			}
		}
	})
	t.Run("GetUnknown", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		_, err := d.Executor().LivenessGet(Ctx(t), "nope")
		isNoRows(t, "get unknown", err)
		_, err = d.Executor().LivenessLatest(Ctx(t), "nope")
		isNoRows(t, "latest of unknown kind", err)
	})
	t.Run("ListOrder", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		if got, err := ex.LivenessList(ctx); err != nil || len(got) != 0 {
			t.Fatalf("empty list = %v, %v", got, err)
		}
		// Newest started first; ties by instance id in byte order ("B" < "a").
		for _, r := range []driver.LivenessRow{row("a", "x", 0), row("B", "x", 0), row("c", "y", 5)} {
			must(t, "upsert", ErrOnly(ex.LivenessUpsert(ctx, r)))
		}
		got, err := ex.LivenessList(ctx)
		must(t, "list", err)
		if ids := livenessIDs(got); ids != "c B a" {
			t.Fatalf("list order %q, want c B a", ids)
		}
	})
	t.Run("LatestOrder", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		old := row("old", "agent", 0)
		late := row("late", "agent", 10)
		tie1, tie2 := row("b", "agent", 10), row("a", "agent", 10)
		tie1.LastHeartbeatAt = late.LastHeartbeatAt.Add(time.Second)
		tie2.LastHeartbeatAt = tie1.LastHeartbeatAt
		for _, r := range []driver.LivenessRow{old, late, tie1, tie2, row("other", "pipeline", 20)} {
			must(t, "upsert", ErrOnly(ex.LivenessUpsert(ctx, r)))
		}
		// Newest started, then latest heartbeat, then instance id.
		got, err := ex.LivenessLatest(ctx, "agent")
		must(t, "latest", err)
		if got.InstanceID != "a" {
			t.Fatalf("latest agent = %s, want a", got.InstanceID)
		}
	})
	t.Run("SetDesiredState", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		r := row("i-1", "agent", 0)
		must(t, "upsert", ErrOnly(ex.LivenessUpsert(ctx, r)))
		found, err := ex.LivenessSetDesiredState(ctx, "i-1", "stop_requested")
		if err != nil || !found {
			t.Fatalf("set on a row = %v, %v", found, err)
		}
		got, _ := ex.LivenessGet(ctx, "i-1")
		if got.DesiredState != "stop_requested" || !got.LastHeartbeatAt.Equal(r.LastHeartbeatAt) {
			t.Fatalf("after the stop request: %+v (the heartbeat must not move)", got)
		}
		if found, err := ex.LivenessSetDesiredState(ctx, "i-1", ""); err != nil || !found {
			t.Fatalf("clear = %v, %v", found, err)
		}
		if got, _ := ex.LivenessGet(ctx, "i-1"); got.DesiredState != "" {
			t.Fatalf("cleared desired state reads %q", got.DesiredState)
		}
		if found, err := ex.LivenessSetDesiredState(ctx, "nope", "stop_requested"); err != nil || found {
			t.Fatalf("set on no row = %v, %v; want false, nil", found, err)
		}
	})
}

// LivenessHistory checks the primitives of a long history: its pages, the
// alive range and the pruning of old rows.
func LivenessHistory(t *testing.T, newDB NewDB) {
	// Rows a..f: b and c start at the same time (the id breaks the tie,
	// in byte order: "B" before "b"); "d" exited; alive_until set on a, B, b
	// and e (alive at T0+100s or later), f none.
	seed := func(t *testing.T, ex driver.Executor) {
		t.Helper()
		for _, r := range []driver.LivenessRow{
			withUntil(row("a", "critic", 10), 200), withUntil(row("b", "exec", 20), 100),
			withUntil(row("B", "critic", 20), 150), withExit(row("d", "exec", 30)),
			withUntil(row("e", "exec", 40), 50), row("f", "critic", 5),
		} {
			must(t, "upsert "+r.InstanceID, ErrOnly(ex.LivenessUpsert(Ctx(t), r)))
		}
	}
	end := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	t.Run("PagesTheHistory", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		seed(t, ex)
		now := T0.Add(100 * time.Second)
		for _, c := range []struct {
			name  string
			p     driver.LivenessPageParams
			pages []string
		}{
			{"all", driver.LivenessPageParams{Limit: 2}, []string{"e d", "B b", "a f", ""}},
			{"all at once", driver.LivenessPageParams{Limit: 10}, []string{"e d B b a f"}},
			{"kinds", driver.LivenessPageParams{Kinds: []string{"critic"}, Limit: 2}, []string{"B a", "f", ""}},
			// Not alive at now: e (until 50 s), d (exited), f (none).
			{"stopped", driver.LivenessPageParams{StoppedOnly: true, Now: now, Limit: 2}, []string{"e d", "f", ""}},
		} {
			p, got := c.p, []string{}
			p.AfterStartedAt = end
			for range len(c.pages) {
				rows, err := ex.LivenessPage(ctx, p)
				must(t, c.name, err)
				got = append(got, livenessIDs(rows))
				if len(rows) == 0 {
					break
				}
				last := rows[len(rows)-1]
				p.AfterStartedAt, p.AfterInstanceID = last.StartedAt, last.InstanceID
			}
			if strings.Join(got, "|") != strings.Join(c.pages, "|") {
				t.Errorf("%s: pages %q, want %q", c.name, got, c.pages)
			}
		}
	})
	t.Run("AliveRange", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		seed(t, ex)
		for _, c := range []struct {
			name string
			p    driver.LivenessAliveParams
			want string
		}{
			{"at 100 s: until 100 s included", driver.LivenessAliveParams{Now: T0.Add(100 * time.Second), Limit: 10}, "B b a"},
			{"a microsecond later", driver.LivenessAliveParams{Now: T0.Add(100*time.Second + time.Microsecond), Limit: 10}, "B a"},
			{"kinds", driver.LivenessAliveParams{Now: T0, Kinds: []string{"exec"}, Limit: 10}, "e b"},
			{"limit", driver.LivenessAliveParams{Now: T0, Limit: 2}, "e B"},
			{"after the cursor", driver.LivenessAliveParams{Now: T0, AfterStartedAt: T0.Add(20 * time.Second), AfterInstanceID: "B", Limit: 10}, "b a"},
		} {
			if c.p.AfterStartedAt.IsZero() {
				c.p.AfterStartedAt = end
			}
			rows, err := ex.LivenessAlive(ctx, c.p)
			must(t, c.name, err)
			if got := livenessIDs(rows); got != c.want {
				t.Errorf("%s: %q, want %q", c.name, got, c.want)
			}
		}
	})
	t.Run("CountByKind", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		seed(t, ex)
		got, err := ex.LivenessCountByKind(ctx)
		must(t, "count", err)
		if want := []driver.LivenessKindCount{{ProcessKind: "critic", Count: 3}, {ProcessKind: "exec", Count: 3}}; !slices.Equal(got, want) {
			t.Fatalf("counts %+v, want %+v", got, want)
		}
	})
	t.Run("PruneDeletesOldRowsNotAlive", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		seed(t, ex)
		// Before T0+35 s, not alive at T0+120 s: f (5 s, none), d (30 s,
		// exited). a and B are alive still; b (20 s) stopped at 100 s.
		p := driver.LivenessPruneParams{Before: T0.Add(35 * time.Second), Now: T0.Add(120 * time.Second), Limit: 2}
		n, err := ex.LivenessPrune(ctx, p)
		must(t, "prune", err)
		m, err := ex.LivenessPrune(ctx, p)
		must(t, "prune again", err)
		if n != 2 || m != 1 {
			t.Fatalf("pruned %d then %d, want 2 (the batch) then 1", n, m)
		}
		rows, err := ex.LivenessList(ctx)
		must(t, "list", err)
		if got := livenessIDs(rows); got != "e B a" {
			t.Fatalf("left %q, want the rows alive or newer than the cutoff: e B a", got)
		}
	})
}

// withUntil sets r's alive_until s seconds after T0.
func withUntil(r driver.LivenessRow, s int) driver.LivenessRow {
	r.AliveUntil = T0.Add(time.Duration(s) * time.Second)
	return r
}

// withExit marks r exited at its start.
func withExit(r driver.LivenessRow) driver.LivenessRow {
	r.ExitedAt = r.StartedAt
	return r
}

func livenessIDs(rows []driver.LivenessRow) string {
	s := ""
	for i, r := range rows {
		if i > 0 {
			s += " "
		}
		s += r.InstanceID
	}
	return s
}

// ErrOnly drops the first result of a (value, error) call, for a check
// of the error alone.
func ErrOnly[T any](_ T, err error) error { return err }
