package peers

import (
	"testing"
	"time"
)

// TestRiverThroughputSettings: River's throughput runs use the tuned fetch
// settings unless told otherwise, since its default 100 ms FetchCooldown
// caps a queue at 10 jobs/s per worker and would understate it.
func TestRiverThroughputSettings(t *testing.T) {
	for _, tc := range []struct {
		cfg            Config
		cooldown, poll time.Duration
	}{
		{Config{}, time.Millisecond, time.Millisecond},
		{Config{TunedCooldown: 5 * time.Millisecond, TunedPoll: 20 * time.Millisecond}, 5 * time.Millisecond, 20 * time.Millisecond},
		{Config{RiverDefaultFetch: true}, 0, 0},
	} {
		s := tc.cfg.withDefaults().riverThroughputSettings(100)
		if s.workers != 100 || s.cooldown != tc.cooldown || s.poll != tc.poll {
			t.Errorf("%+v: settings %+v, want 100 workers, cooldown %s, poll %s", tc.cfg, s, tc.cooldown, tc.poll)
		}
	}
}
