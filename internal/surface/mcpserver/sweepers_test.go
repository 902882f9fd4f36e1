package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

func TestSweeperTools(t *testing.T) {
	e := newEnv(t)
	set, err := config.ParseHub(func(k string) string {
		return map[string]string{"CKS_STALE_STOP_REPORT_SWEEPER_ENABLED": "false"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	rt := startRuntime(t, e, hub.RuntimeConfig{Settings: set})
	mcpserver.Register(e.srv, &ops.Services{Sweepers: rt.Sweepers})
	cs := connectInMemory(t, e.srv)

	type status struct {
		AgentID        string `json:"agent_id"`
		Kind           string `json:"kind"`
		Running        bool   `json:"running"`
		ConfigEnabled  bool   `json:"config_enabled"`
		DesiredRunning *bool  `json:"desired_running"`
	}
	list := structured[struct {
		Sweepers []status `json:"sweepers"`
	}](t, call(t, cs, mcpserver.ToolListAgents, nil))
	if len(list.Sweepers) != 8 || list.Sweepers[0].Kind != "sweeper" || list.Sweepers[2].ConfigEnabled {
		t.Fatalf("list_agents = %+v", list)
	}
	st := structured[status](t, call(t, cs, mcpserver.ToolStartAgent, map[string]any{"agent_id": "lease_reaper"}))
	if !st.Running || st.DesiredRunning == nil || !*st.DesiredRunning {
		t.Fatalf("start_agent = %+v", st)
	}
	st = structured[status](t, call(t, cs, mcpserver.ToolStopAgent, map[string]any{"agent_id": "lease_reaper"}))
	if st.Running || st.DesiredRunning == nil || *st.DesiredRunning {
		t.Fatalf("stop_agent = %+v", st)
	}
	st = structured[status](t, call(t, cs, mcpserver.ToolAgentStatus, map[string]any{"agent_id": "lease_reaper"}))
	if st.Running {
		t.Fatalf("agent_status after stop = %+v", st)
	}

	for _, c := range []struct {
		tool, id string
		want     []string
	}{
		{mcpserver.ToolAgentStatus, "nope", []string{"lease_reaper", "dependency_release", "stale_stop_report"}},
		{mcpserver.ToolStartAgent, "nope", []string{"lease_reaper"}},
		{mcpserver.ToolStartAgent, "stale_stop_report", []string{"disabled by configuration"}},
		{mcpserver.ToolStopAgent, "stale_stop_report", []string{"disabled by configuration"}},
	} {
		res := call(t, cs, c.tool, map[string]any{"agent_id": c.id})
		text := toolText(t, res)
		for _, w := range c.want {
			if !res.IsError || !strings.Contains(text, w) {
				t.Errorf("%s(%s): IsError=%v %q, want a tool error mentioning %q", c.tool, c.id, res.IsError, text, w)
			}
		}
	}
	if o, _ := e.store.Sweepers.GetSweeperDesiredRunning(context.Background(), "stale_stop_report"); o != nil {
		t.Fatal("a refused call on a disabled sweeper wrote an override")
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == mcpserver.ToolStopAgent && (!strings.Contains(tool.Description, "pause") || !strings.Contains(tool.Description, "asymmetric")) {
			t.Fatalf("stop_agent description does not explain pause/resume and the start asymmetry: %s", tool.Description)
		}
	}
}
