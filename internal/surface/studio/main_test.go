package studio_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/cks-dev/cks/internal/agents"
)

// TestMain fails the run when a goroutine its tests started (a store's, a
// server's, the browser's) outlives them; the package's one browser is
// ended first (browser_test.go).
func TestMain(m *testing.M) {
	agents.RunExecGuard() // the exec agent of the browser tests runs its command under this binary started again
	runOutsideAgent()     // the agent process of TestBrowserBoardFollowsOutsideAgent is this binary started again
	code := m.Run()
	stopBrowser()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
