package mcpserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// TestRequestProcessStop: the newest alive instance of the kind is asked to
// stop, or the instance named by its id (as POST /v1/processes/{id}/stop
// does: one operation); a kind with no alive instance answers found false,
// not an error, as for a kind that never reported; a text that is no kind
// is a tool error naming the field.
func TestRequestProcessStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := connectInMemory(t, e.srv)
	backendtest.MustUpsert(t, e.store, backendtest.Liveness("critic-old", "critic", 0))
	backendtest.MustUpsert(t, e.store, backendtest.Liveness("critic-new", "critic", time.Minute))
	backendtest.MustUpsert(t, e.store, backendtest.Liveness("pipe-1", "pipeline", -time.Hour))
	e.clock.Set(backendtest.T0.Add(2 * time.Minute))

	for _, tc := range []struct {
		kind string
		want cks.ProcessStopResult
	}{
		{"critic", cks.ProcessStopResult{Found: true, InstanceID: "critic-new", ProcessKind: "critic"}},
		{"pipeline", cks.ProcessStopResult{InstanceID: "pipe-1", ProcessKind: "pipeline"}},
		{"enrichment", cks.ProcessStopResult{ProcessKind: "enrichment"}},
		// An instance id: that instance, alive or not.
		{"critic-old", cks.ProcessStopResult{InstanceID: "critic-old", ProcessKind: "critic"}},
	} {
		res := call(t, cs, mcpserver.ToolRequestProcessStop, map[string]any{"process_kind": tc.kind})
		var got cks.ProcessStopResult
		decode(t, res, &got)
		if got != tc.want {
			t.Errorf("request_process_stop(%s) = %+v, want %+v", tc.kind, got, tc.want)
		}
		if !tc.want.Found && !strings.Contains(text(t, res), `"found":false`) {
			t.Errorf("request_process_stop(%s) text %s lacks \"found\":false", tc.kind, text(t, res))
		}
	}
	for id, want := range map[string]string{"critic-new": cks.DesiredStopRequested, "critic-old": "", "pipe-1": ""} {
		r, err := e.store.Liveness.GetAgentLiveness(ctx(t), id)
		if err != nil || r.DesiredState != want {
			t.Errorf("%s desired_state %q (%v), want %q", id, r.DesiredState, err, want)
		}
	}

	for _, c := range []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"process_kind": "jani/tor"}, []string{"process_kind", "a process kind"}},
		{map[string]any{}, []string{"process_kind"}},
	} {
		res := call(t, cs, mcpserver.ToolRequestProcessStop, c.args)
		if !res.IsError {
			t.Errorf("request_process_stop(%v): IsError false, want a tool error; %s", c.args, text(t, res))
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(text(t, res), w) {
				t.Errorf("request_process_stop(%v): %q does not mention %q", c.args, text(t, res), w)
			}
		}
	}
}

// TestRequestProcessStopNeedsControl: over the hub's /mcp, a principal that
// can read everything gets a tool error naming control on the kind's
// resource, and nothing is requested; control on exactly that kind suffices.
func TestRequestProcessStopNeedsControl(t *testing.T) {
	hs, e, _ := mcpOverAPI(t)
	backendtest.MustUpsert(t, e.store, backendtest.Liveness("critic-1", "critic", 0))
	args := map[string]any{"process_kind": "critic"}

	reader := connectAs(t, hs.URL, token(t, e.store.Principals, cks.Grant{Resource: "/", Permission: auth.PermRead}))
	r := call(t, reader, mcpserver.ToolRequestProcessStop, args)
	if !r.IsError || !strings.Contains(text(t, r), "needs control on /processes/critic") {
		t.Fatalf("request_process_stop with read on /: IsError=%v %q, want forbidden naming control on /processes/critic", r.IsError, text(t, r))
	}
	other := connectAs(t, hs.URL, token(t, e.store.Principals, cks.Grant{Resource: "/processes/pipeline", Permission: auth.PermControl}))
	if r := call(t, other, mcpserver.ToolRequestProcessStop, args); !r.IsError || !strings.Contains(text(t, r), "needs control on /processes/critic") {
		t.Fatalf("request_process_stop with control on another kind: IsError=%v %q", r.IsError, text(t, r))
	}
	if row, _ := e.store.Liveness.GetAgentLiveness(ctx(t), "critic-1"); row.DesiredState != "" {
		t.Fatalf("desired_state %q after refused requests, want none", row.DesiredState)
	}

	ctl := connectAs(t, hs.URL, token(t, e.store.Principals, cks.Grant{Resource: "/processes/critic", Permission: auth.PermControl}))
	var got cks.ProcessStopResult
	decode(t, call(t, ctl, mcpserver.ToolRequestProcessStop, args), &got)
	if !got.Found || got.InstanceID != "critic-1" {
		t.Fatalf("request_process_stop with control on /processes/critic = %+v, want critic-1 found", got)
	}
	if row, _ := e.store.Liveness.GetAgentLiveness(ctx(t), "critic-1"); row.DesiredState != cks.DesiredStopRequested {
		t.Fatalf("desired_state %q, want %s", row.DesiredState, cks.DesiredStopRequested)
	}
}

// TestReportProcessOverMCP: over the hub's /mcp, a credential granted
// update on its own kind reports its process, which list_processes shows
// and request_process_stop reaches (the next report answers
// stop_requested); another credential with the same grant cannot write
// that row, and one for another kind is refused.
func TestReportProcessOverMCP(t *testing.T) {
	hs, e, _ := mcpOverAPI(t)
	grant := cks.Grant{Resource: "/processes/summarize", Permission: auth.PermUpdate}
	agent := connectAs(t, hs.URL, token(t, e.store.Principals, grant))
	args := map[string]any{"process_kind": "summarize", "instance_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
		"hostname": "box", "pid": 4242, "task_types": []string{"summarize"}}
	var p cks.Process
	decode(t, call(t, agent, mcpserver.ToolReportProcess, args), &p)
	if p.Status != cks.ProcessAlive || p.ProcessKind != "summarize" || p.PID != 4242 || p.ReportedBy == "" || p.DesiredState != "" {
		t.Fatalf("first report = %+v", p)
	}

	ctl := connectAs(t, hs.URL, token(t, e.store.Principals, cks.Grant{Resource: "/processes", Permission: auth.PermControl},
		cks.Grant{Resource: "/", Permission: auth.PermRead}))
	var list cks.ProcessList
	decode(t, call(t, ctl, mcpserver.ToolListProcesses, map[string]any{"kind": "summarize"}), &list)
	if len(list.Processes) != 1 || list.Processes[0].InstanceID != args["instance_id"] {
		t.Fatalf("list_processes = %+v", list)
	}
	var stop cks.ProcessStopResult
	decode(t, call(t, ctl, mcpserver.ToolRequestProcessStop, map[string]any{"process_kind": "summarize"}), &stop)
	if !stop.Found {
		t.Fatalf("stop = %+v", stop)
	}
	decode(t, call(t, agent, mcpserver.ToolReportProcess, args), &p)
	if p.DesiredState != cks.DesiredStopRequested {
		t.Fatalf("report after the stop answered desired_state %q", p.DesiredState)
	}

	twin := connectAs(t, hs.URL, token(t, e.store.Principals, grant))
	if r := call(t, twin, mcpserver.ToolReportProcess, args); !r.IsError || !strings.Contains(text(t, r), "reported by another principal") {
		t.Fatalf("report by another principal: IsError=%v %q", r.IsError, text(t, r))
	}
	elsewhere := connectAs(t, hs.URL, token(t, e.store.Principals, cks.Grant{Resource: "/processes/critic", Permission: auth.PermUpdate}))
	if r := call(t, elsewhere, mcpserver.ToolReportProcess, args); !r.IsError || !strings.Contains(text(t, r), "needs update on /processes/summarize") {
		t.Fatalf("report with update on another kind: IsError=%v %q", r.IsError, text(t, r))
	}
	args["exited"] = true
	decode(t, call(t, agent, mcpserver.ToolReportProcess, args), &p)
	if p.Status != cks.ProcessStopped || p.ExitedAt.IsZero() {
		t.Fatalf("last report = %+v", p)
	}
}
