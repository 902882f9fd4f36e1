package bench_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when a goroutine its tests started (a store's, a
// server's) outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
