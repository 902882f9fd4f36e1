package mcpserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/backend/backendtest"
	"github.com/cks-dev/cks/liveness"
	"github.com/cks-dev/cks/mcpserver"
)

// TestRequestProcessStop: the newest alive instance of the kind is asked to
// stop, or the instance named by its id (as POST /v1/processes/{id}/stop
// does: one operation); a kind with no alive instance answers found false,
// not an error; an unknown kind is a tool error naming the known kinds.
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
		{map[string]any{"process_kind": "janitor"}, append([]string{`"janitor"`}, liveness.KnownKinds()...)},
		// Neither a kind nor the id of an instance that reported.
		{map[string]any{"process_kind": "critic-gone"}, []string{`"critic-gone"`, "critic, enrichment"}},
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
