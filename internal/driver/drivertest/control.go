package drivertest

import (
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

// Control checks the sweeper-control primitives.
func Control(t *testing.T, newDB NewDB) {
	t.Run("UpsertAndGet", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		_, err := ex.SweeperControlGet(ctx, "lease_reaper")
		isNoRows(t, "get without an override", err)
		must(t, "stop", ex.SweeperControlUpsert(ctx, "lease_reaper", false, T0))
		if running, err := ex.SweeperControlGet(ctx, "lease_reaper"); err != nil || running {
			t.Fatalf("after a stop override: %v, %v", running, err)
		}
		must(t, "start", ex.SweeperControlUpsert(ctx, "lease_reaper", true, T0.Add(time.Minute)))
		if running, err := ex.SweeperControlGet(ctx, "lease_reaper"); err != nil || !running {
			t.Fatalf("after a start override: %v, %v", running, err)
		}
		_, err = ex.SweeperControlGet(ctx, "graph_health")
		isNoRows(t, "another sweeper", err)
	})
}

// Leaders checks the leader-election primitives. The times are the wall
// clock's: Postgres judges a leadership by its own clock, so a lease runs
// out here by a fixture that dates it in the past (T0), never by waiting.
func Leaders(t *testing.T, newDB NewDB) {
	d, db := open(t, newDB)
	ex, ctx := d.Executor(), Ctx(t)
	elect := func(id string) (driver.LeaderRow, error) {
		return ex.LeaderElect(ctx, driver.LeaderElectParams{Name: "maintenance", LeaderID: id, TTL: time.Hour, Now: time.Now()})
	}
	_, err := ex.LeaderGet(ctx, "maintenance", time.Now())
	isNoRows(t, "get before any election", err)

	a, err := elect("hub-a")
	must(t, "first election", err)
	if a.LeaderID != "hub-a" || !a.ExpiresAt.After(a.ElectedAt) {
		t.Fatalf("first election = %+v, want hub-a holding it for a while", a)
	}
	_, err = elect("hub-b")
	isNoRows(t, "an election while another holds it", err)
	if got, err := ex.LeaderGet(ctx, "maintenance", time.Now()); err != nil || got.LeaderID != "hub-a" {
		t.Fatalf("get = %+v, %v; want hub-a", got, err)
	}
	renewed, err := elect("hub-a")
	must(t, "renewal", err)
	if !renewed.ElectedAt.Equal(a.ElectedAt) || renewed.ExpiresAt.Before(a.ExpiresAt) {
		t.Fatalf("renewal = %+v after %+v: want elected_at kept and expires_at no earlier", renewed, a)
	}

	if ok, err := ex.LeaderResign(ctx, "maintenance", "hub-b"); err != nil || ok {
		t.Fatalf("resign by a non-holder = %v, %v; want false", ok, err)
	}
	if ok, err := ex.LeaderResign(ctx, "maintenance", "hub-a"); err != nil || !ok {
		t.Fatalf("resign by the holder = %v, %v; want true", ok, err)
	}
	b, err := elect("hub-b")
	must(t, "election after a resignation", err)
	if b.LeaderID != "hub-b" {
		t.Fatalf("after hub-a resigned: %+v, want hub-b", b)
	}

	// hub-b's lease runs out (its host stopped renewing it).
	exec(t, db, "UPDATE cks_leaders SET expires_at = "+T0SQL)
	_, err = ex.LeaderGet(ctx, "maintenance", time.Now())
	isNoRows(t, "get of a leadership whose lease ran out", err)
	a2, err := elect("hub-a")
	must(t, "election after the lease ran out", err)
	if a2.LeaderID != "hub-a" || !a2.ElectedAt.After(b.ElectedAt) {
		t.Fatalf("takeover = %+v, want hub-a newly elected after %v", a2, b.ElectedAt)
	}
	_, err = ex.LeaderElect(ctx, driver.LeaderElectParams{Name: "other", LeaderID: "hub-b", TTL: time.Hour, Now: time.Now()})
	must(t, "another leadership is independent", err)
}

// SweeperPasses checks the sweeper-pass primitives: a pass reads back
// whole, newest first per sweeper, bounded by the limit; the prune deletes
// by age and the trim each sweeper's beyond its newest few, in bounded
// batches.
func SweeperPasses(t *testing.T, newDB NewDB) {
	d, _ := open(t, newDB)
	ex, ctx := d.Executor(), Ctx(t)
	pass := func(agent string, s int) driver.SweeperPassRow {
		return driver.SweeperPassRow{AgentID: agent, HubID: "hub-a", StartedAt: T0.Add(time.Duration(s) * time.Second),
			DurationMS: 1.25 + float64(s), ResultCount: s}
	}
	for s := range 5 {
		must(t, "insert", ex.SweeperPassInsert(ctx, pass("lease_reaper", s)))
	}
	failed := pass("graph_health", 2)
	failed.Error, failed.Details = "boom", `{"cycles":1}`
	must(t, "insert a failure", ex.SweeperPassInsert(ctx, failed))

	recent := func(agent string, limit int) []driver.SweeperPassRow {
		t.Helper()
		rows, err := ex.SweeperPassRecent(ctx, driver.SweeperPassRecentParams{AgentID: agent, Limit: limit})
		must(t, "recent", err)
		return rows
	}
	got := recent("lease_reaper", 3)
	if len(got) != 3 {
		t.Fatalf("recent 3 = %d rows", len(got))
	}
	for i, r := range got {
		want := pass("lease_reaper", 4-i)
		if r.PassID == 0 || r.AgentID != want.AgentID || r.HubID != want.HubID || !r.StartedAt.Equal(want.StartedAt) ||
			r.DurationMS != want.DurationMS || r.ResultCount != want.ResultCount || r.Error != "" || r.Details != "" {
			t.Fatalf("recent[%d] = %+v, want %+v", i, r, want)
		}
	}
	if g := recent("graph_health", 10); len(g) != 1 || g[0].Error != "boom" || g[0].Details != `{"cycles":1}` {
		t.Fatalf("graph_health's passes = %+v", g)
	}
	if g := recent("retention", 10); len(g) != 0 {
		t.Fatalf("a sweeper without passes has %+v", g)
	}

	n, err := ex.SweeperPassTrim(ctx, driver.SweeperPassTrimParams{AgentID: "lease_reaper", Keep: 2, Limit: 2})
	if err != nil || n != 2 {
		t.Fatalf("trim to 2, a batch of 2 = %d, %v; want 2", n, err)
	}
	n, err = ex.SweeperPassTrim(ctx, driver.SweeperPassTrimParams{AgentID: "lease_reaper", Keep: 2, Limit: 10})
	if err != nil || n != 1 {
		t.Fatalf("trim to 2 again = %d, %v; want the last 1 beyond", n, err)
	}
	if g := recent("lease_reaper", 10); len(g) != 2 || g[0].ResultCount != 4 || g[1].ResultCount != 3 {
		t.Fatalf("after the trim: %+v, want the newest two", g)
	}
	if g := recent("graph_health", 10); len(g) != 1 {
		t.Fatalf("the trim of lease_reaper touched graph_health: %+v", g)
	}

	n, err = ex.SweeperPassPrune(ctx, driver.SweeperPassPruneParams{Before: T0.Add(4 * time.Second), Limit: 10})
	if err != nil || n != 2 {
		t.Fatalf("prune before T0+4s = %d, %v; want lease_reaper's pass 3 and graph_health's", n, err)
	}
	if g := recent("lease_reaper", 10); len(g) != 1 || g[0].ResultCount != 4 {
		t.Fatalf("after the prune: %+v, want the pass at T0+4s", g)
	}
}
