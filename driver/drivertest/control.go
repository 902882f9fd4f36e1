package drivertest

import (
	"testing"
	"time"
)

// Control checks the sweeper-control primitives.
func Control(t *testing.T, newDB NewDB) {
	t.Run("UpsertAndGet", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), testCtx(t)
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
