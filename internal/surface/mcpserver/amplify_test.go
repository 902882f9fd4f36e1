package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// TestToolAnswersAreNotEscaped: a tool's answer carries <, > and & as they
// are, so a payload of them comes back about its own size (as \u003c each
// it was six times that: issue 22, finding 2).
func TestToolAnswersAreNotEscaped(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		clk := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(clk))
		srv := mcpserver.NewServer("v-test", &ops.Services{Liveness: liveness.NewService(s.Driver(), clk)})
		mcpserver.Register(srv, &ops.Services{Tasks: s.Tasks})
		cs := connectInMemory(t, srv)
		text := strings.Repeat("<&>", 10<<10)
		res := call(t, cs, mcpserver.ToolCreateTask, map[string]any{"type": "t", "payload": map[string]any{"s": text}})
		if res.IsError {
			t.Fatalf("create_task: %s", toolText(t, res))
		}
		if got := toolText(t, res); !strings.Contains(got, text) || len(got) > len(text)+4096 {
			t.Errorf("create_task answered %d bytes for a payload of %d, want the text as it is", len(got), len(text))
		}
	})
}
