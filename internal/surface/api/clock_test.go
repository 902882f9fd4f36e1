package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/surface/api"
)

// TestHealthzClock: /healthz shows the correction of the hub's clock to
// the database's while one is in use, and nothing when none is (SQLite).
func TestHealthzClock(t *testing.T) {
	for _, tc := range []struct {
		name      string
		corrected bool
		want      *api.HealthClock
	}{
		{"corrected", true, &api.HealthClock{OffsetS: -30, UncertaintyS: 0.001}},
		{"not corrected", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := api.New(api.Config{ClockCorrection: func() (clock.Measurement, bool) {
				return clock.Measurement{Offset: -30 * time.Second, RTT: 2 * time.Millisecond}, tc.corrected
			}})
			code, h := healthz(t, a)
			if code != http.StatusOK || (h.Clock == nil) != (tc.want == nil) || h.Clock != nil && *h.Clock != *tc.want {
				t.Fatalf("/healthz: %d, clock %+v, want %+v", code, h.Clock, tc.want)
			}
		})
	}
}
