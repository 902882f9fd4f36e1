package drivertest

import (
	"testing"
	"time"

	"github.com/cks-dev/cks/driver"
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
