package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/service/auth"
)

// stopRows writes, at T0+2m: critic-old (heartbeat T0, stopped), critic-new
// (newest critic, alive), enr-1 (alive enrichment) and pipe-1 (a pipeline
// silent for an hour).
func stopRows(t *testing.T, f *fixture) {
	t.Helper()
	backendtest.MustUpsert(t, f.store, backendtest.Liveness("critic-old", "critic", 0))
	backendtest.MustUpsert(t, f.store, backendtest.Liveness("critic-new", "critic", time.Minute))
	backendtest.MustUpsert(t, f.store, backendtest.Liveness("enr-1", "enrichment", time.Minute))
	backendtest.MustUpsert(t, f.store, backendtest.Liveness("pipe-1", "pipeline", -time.Hour))
	f.clock.Set(backendtest.T0.Add(2 * time.Minute))
}

func desiredState(t *testing.T, f *fixture, id string) string {
	t.Helper()
	r, err := f.store.Liveness.GetAgentLiveness(context.Background(), id)
	if err != nil {
		t.Fatalf("GetAgentLiveness(%s): %v", id, err)
	}
	return r.DesiredState
}

// TestProcessStopOverHTTP: POST /v1/processes/{kind}/stop by kind (the newest
// instance) and by instance id; found false, not an error, when no alive
// instance is there; an unknown kind is a 400 listing the kinds.
func TestProcessStopOverHTTP(t *testing.T) {
	f := newFixture(t)
	stopRows(t, f)
	c := f.client()
	ctx := context.Background()
	ch, unsubscribe := f.bus.Subscribe()
	defer unsubscribe()

	for _, tc := range []struct {
		name, target string
		want         cks.ProcessStopResult
	}{
		{"kind: newest instance", "critic", cks.ProcessStopResult{Found: true, InstanceID: "critic-new", ProcessKind: "critic"}},
		{"instance id", "enr-1", cks.ProcessStopResult{Found: true, InstanceID: "enr-1", ProcessKind: "enrichment"}},
		{"kind whose newest is stopped", "pipeline", cks.ProcessStopResult{InstanceID: "pipe-1", ProcessKind: "pipeline"}},
		{"kind that never reported", "fork_resolution", cks.ProcessStopResult{ProcessKind: "fork_resolution"}},
		{"stopped instance id", "critic-old", cks.ProcessStopResult{InstanceID: "critic-old", ProcessKind: "critic"}},
	} {
		got, err := c.StopProcess(ctx, tc.target)
		if err != nil || got != tc.want {
			t.Errorf("%s: StopProcess(%s) = %+v, %v; want %+v", tc.name, tc.target, got, err, tc.want)
		}
		if tc.want.Found {
			select {
			case e := <-ch:
				if e.Type != events.ProcessesChanged {
					t.Errorf("%s: event %s, want %s", tc.name, e.Type, events.ProcessesChanged)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: no processes event after a stop request", tc.name)
			}
		}
	}
	for id, want := range map[string]string{"critic-new": cks.DesiredStopRequested, "enr-1": cks.DesiredStopRequested,
		"critic-old": "", "pipe-1": ""} {
		if got := desiredState(t, f, id); got != want {
			t.Errorf("%s desired_state %q, want %q", id, got, want)
		}
	}
	// The raw body says found false explicitly.
	status, body := f.do(t, f.token, "POST", "/v1/processes/fork_resolution/stop", "")
	if status != http.StatusOK || !strings.Contains(body, `"found":false`) {
		t.Fatalf("stop of a kind with no alive instance: %d %s, want 200 found false", status, body)
	}
	// A repeated request is answered the same way (the instance is still alive).
	if got, err := c.StopProcess(ctx, "critic"); err != nil || !got.Found || got.InstanceID != "critic-new" {
		t.Fatalf("repeated stop: %+v %v", got, err)
	}

	// Any kind may report: one that never did has nothing to stop; a text
	// that is no kind is a 400 naming the field.
	if got, err := c.StopProcess(ctx, "janitor"); err != nil || got.Found || got.ProcessKind != "janitor" {
		t.Fatalf("a kind that never reported: %+v, %v", got, err)
	}
	_, err := c.StopProcess(ctx, "jani tor")
	if e := apiErr(t, err); e.Status != http.StatusBadRequest || e.Code != "invalid_argument" || !strings.Contains(e.Message, "process_kind") {
		t.Fatalf("no kind: %v, want 400 invalid_argument naming process_kind", err)
	}
	// No start for processes (ADR-016 §4).
	if status, body := f.do(t, f.token, "POST", "/v1/processes/critic/start", "{}"); status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
		t.Fatalf("POST /v1/processes/critic/start: %d %s, want no such endpoint", status, body)
	}
}

// TestProcessStopPermissions: control on /processes/KIND of the process the
// target names, whether the target is a kind or an instance id.
func TestProcessStopPermissions(t *testing.T) {
	f := newFixture(t)
	stopRows(t, f)
	ctx := context.Background()

	enr := client.New(f.srv.URL, f.tokenWith(t, cks.Grant{Resource: "/processes/enrichment", Permission: auth.PermControl}))
	if got, err := enr.StopProcess(ctx, "enr-1"); err != nil || !got.Found {
		t.Fatalf("control on /processes/enrichment, stop enr-1: %+v %v", got, err)
	}
	if got, err := enr.StopProcess(ctx, "enrichment"); err != nil || !got.Found || got.InstanceID != "enr-1" {
		t.Fatalf("control on /processes/enrichment, stop enrichment: %+v %v", got, err)
	}
	tok := f.tokenWith(t, cks.Grant{Resource: "/processes/enrichment", Permission: auth.PermControl})
	for _, target := range []string{"critic", "critic-new"} {
		status, body := f.do(t, tok, "POST", "/v1/processes/"+target+"/stop", "")
		wantForbidden(t, status, body, auth.PermControl, "/processes/critic")
	}
	// Reading everything is not controlling anything.
	reader := f.tokenWith(t, cks.Grant{Resource: "/", Permission: auth.PermRead})
	for _, target := range []string{"critic", "critic-new", "enr-1"} {
		status, body := f.do(t, reader, "POST", "/v1/processes/"+target+"/stop", "")
		kind := map[string]string{"critic": "critic", "critic-new": "critic", "enr-1": "enrichment"}[target]
		wantForbidden(t, status, body, auth.PermControl, "/processes/"+kind)
	}
	if got := desiredState(t, f, "critic-new"); got != "" {
		t.Fatalf("critic-new desired_state %q after refused requests, want none", got)
	}
	// Neither a kind nor an instance: checked as itself, so only a caller
	// who may control it is told it names nothing.
	status, body := f.do(t, tok, "POST", "/v1/processes/janitor/stop", "")
	wantForbidden(t, status, body, auth.PermControl, "/processes/janitor")
	all := f.tokenWith(t, cks.Grant{Resource: "/processes", Permission: auth.PermControl})
	status, body = f.do(t, all, "POST", "/v1/processes/janitor/stop", "")
	if status != http.StatusOK || !strings.Contains(body, `"found":false`) {
		t.Fatalf("a kind that never reported, with control on /processes: %d %s, want 200 found false", status, body)
	}
	// Controlling the sweepers is not controlling the processes.
	sw := f.tokenWith(t, cks.Grant{Resource: "/sweepers", Permission: auth.PermControl})
	status, body = f.do(t, sw, "POST", "/v1/processes/critic/stop", "")
	wantForbidden(t, status, body, auth.PermControl, "/processes/critic")
}

// TestProcessStopInRouteTable: the route is in the table the ACL matrix
// iterates, with control on /processes/{process_kind}.
func TestProcessStopInRouteTable(t *testing.T) {
	f := newFixture(t)
	for _, rt := range f.api.Routes() {
		if rt.Pattern == "POST /v1/processes/{process_kind}/stop" {
			if rt.Permission != auth.PermControl || rt.Resource != "/processes/{process_kind}" || rt.Operation != "request_process_stop" {
				t.Fatalf("route %+v, want request_process_stop, control on /processes/{process_kind}", rt)
			}
			return
		}
	}
	t.Fatal("POST /v1/processes/{process_kind}/stop is not in the route table")
}

// TestReportProcessOverHTTP: a process in any language reports over
// POST /v1/processes/KIND/report with a credential limited to its kind:
// it is listed, the operator's stop reaches it in the answer to its next
// report, its last report ends it; a bad field is a 400 naming it and
// writes nothing; another credential cannot write its row (409).
func TestReportProcessOverHTTP(t *testing.T) {
	f := newFixture(t)
	agent := f.tokenWith(t, cks.Grant{Resource: "/processes/summarize", Permission: auth.PermUpdate})
	const beat = `{"instance_id":"6f1c","hostname":"box","pid":99,"liveness_interval_s":5,"task_types":["summarize"]}`
	status, body := f.do(t, agent, "POST", "/v1/processes/summarize/report", beat)
	var p cks.Process
	if err := json.Unmarshal([]byte(body), &p); status != http.StatusOK || err != nil || p.Status != cks.ProcessAlive || p.InstanceID != "6f1c" {
		t.Fatalf("first report: %d %s", status, body)
	}
	list, err := client.New(f.srv.URL, f.token).Processes(context.Background(), cks.ListProcessesInput{})
	if err != nil || len(list.Processes) != 1 || list.Processes[0].ProcessKind != "summarize" || list.Processes[0].PID != 99 {
		t.Fatalf("list_processes = %+v, %v", list, err)
	}
	if status, body := f.do(t, f.token, "POST", "/v1/processes/summarize/stop", ""); status != http.StatusOK || !strings.Contains(body, `"found":true`) {
		t.Fatalf("stop: %d %s", status, body)
	}
	if status, body := f.do(t, agent, "POST", "/v1/processes/summarize/report", beat); status != http.StatusOK ||
		!strings.Contains(body, `"desired_state":"stop_requested"`) {
		t.Fatalf("report after the stop: %d %s", status, body)
	}

	for field, in := range map[string]string{
		"liveness_interval_s": `{"instance_id":"x1","liveness_interval_s":0.5}`,
		"instance_id":         `{"instance_id":"a b"}`,
		"current_task_type":   `{"instance_id":"x2","current_task_id":4,"current_task_type":"no good"}`,
		"pid":                 `{"instance_id":"x3","pid":"one"}`,
	} {
		status, body := f.do(t, agent, "POST", "/v1/processes/summarize/report", in)
		if e := decodeError(t, body); status != http.StatusBadRequest || !strings.Contains(e.Error.Message, field) {
			t.Errorf("%s: %d %s, want a 400 naming it", in, status, body)
		}
	}
	twin := f.tokenWith(t, cks.Grant{Resource: "/processes/summarize", Permission: auth.PermUpdate})
	if status, body := f.do(t, twin, "POST", "/v1/processes/summarize/report", beat); status != http.StatusConflict {
		t.Fatalf("report by another principal: %d %s, want 409", status, body)
	}
	status, body = f.do(t, agent, "POST", "/v1/processes/critic/report", `{"instance_id":"c1"}`)
	wantForbidden(t, status, body, auth.PermUpdate, "/processes/critic")

	if status, body := f.do(t, agent, "POST", "/v1/processes/summarize/report", `{"instance_id":"6f1c","exited":true}`); status != http.StatusOK ||
		!strings.Contains(body, `"status":"stopped"`) {
		t.Fatalf("last report: %d %s", status, body)
	}
	rows, err := f.store.Liveness.ListAgentLiveness(context.Background())
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows after the refusals = %+v, %v; want the one instance", rows, err)
	}
}
