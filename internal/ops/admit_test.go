package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// bases are a valid input of every operation of the table, by name: what a
// probe changes one field of. A bulk operation's selection is by ids for
// the fields of ids (task_ids, and those of the call itself), else by a
// filter (filterBases).
var bases = map[string]string{
	"list_processes": `{}`, "process_status": `{"process_kind":"critic"}`, "request_process_stop": `{"process_kind":"critic"}`,
	"report_process": `{"process_kind":"summarize","instance_id":"i-1"}`,
	"create_task":    `{"type":"t"}`, "list_tasks": `{}`, "count_tasks": `{}`, "task_stats": `{}`, "list_unclaimed_types": `{}`, "get_task": `{"task_id":1}`,
	"answer_task": `{"task_id":1,"text":"a"}`, "cancel_task": `{"task_id":1}`, "stop_task": `{"task_id":1,"reason":"r"}`,
	"start_task": `{"task_id":1}`, "retry_task": `{"task_id":1}`, "update_task": `{"task_id":1,"title":"t"}`,
	"bulk_stop_tasks": `{"task_ids":[1],"reason":"r"}`, "bulk_start_tasks": `{"task_ids":[1]}`,
	"bulk_cancel_tasks": `{"task_ids":[1]}`, "bulk_retry_tasks": `{"task_ids":[1]}`,
	"claim_tasks": `{}`, "mark_running": `{"task_id":1,"lease_token":"x"}`, "touch_task": `{"task_id":1,"lease_token":"x"}`,
	"add_evidence":    `{"task_id":1,"lease_token":"x","kind":"k","body":"b"}`,
	"append_output":   `{"task_id":1,"lease_token":"x","stream":"stdout","text":"hi"}`,
	"get_output":      `{"task_id":1}`,
	"record_decision": `{"task_id":1,"lease_token":"x","kind":"k","derived_from_revision":1}`,
	"reuse_workspace": `{"task_id":1,"lease_token":"x","path":"/w","derived_from_revision":1}`,
	"confirm_abort":   `{"task_id":1,"lease_token":"x"}`, "complete_task": `{"task_id":1,"lease_token":"x"}`,
	"fail_task": `{"task_id":1,"lease_token":"x"}`, "request_input": `{"task_id":1,"lease_token":"x","question":"q"}`,
	"claim_review": `{"task_id":1}`, "approve_review": `{"task_id":1,"lease_token":"x"}`,
	"reject_review": `{"task_id":1,"lease_token":"x"}`, "list_agents": `{}`, "agent_status": `{"agent_id":"lease_reaper"}`,
	"pause_type": `{"type":"build","reason":"provider down"}`, "resume_type": `{"type":"build"}`, "list_paused_types": `{}`,
	"set_limit": `{"name":"openai","pattern":"openai:*","max_running":4}`, "list_limits": `{}`, "delete_limit": `{"name":"openai"}`,
	"report_usage": `{"task_id":1,"lease_token":"t","model":"gpt-5","input_tokens":10,"output_tokens":5,"cost":"0.01"}`,
	"get_usage":    `{"by":["model"],"since":"1h"}`,
	"start_agent":  `{"agent_id":"lease_reaper"}`, "stop_agent": `{"agent_id":"lease_reaper"}`,
	"submit_research": `{"question":"q"}`, "list_objects": `{}`, "get_object": `{"object_id":1}`,
	"list_object_versions": `{"object_id":1}`, "write_object_version": `{"object_id":1,"base_version":1,"content":{}}`,
	"create_token": `{"name":"n","grants":[{"resource":"/","permission":"read"}]}`, "list_tokens": `{}`,
	"revoke_token": `{"id":"x"}`, "list_sessions": `{}`, "revoke_session": `{"id":"x"}`, "check_stored": `{"what":"tasks"}`,
	"create_schedule": `{"name":"s","cron":"@hourly","task":{"type":"t"}}`, "list_schedules": `{}`, "get_schedule": `{"name":"s"}`,
	"pause_schedule": `{"name":"s"}`, "resume_schedule": `{"name":"s"}`, "trigger_schedule": `{"name":"s"}`,
	"delete_schedule": `{"name":"s"}`,
}

// filterBases are the bases of the bulk operations by a filter.
var filterBases = map[string]string{
	"bulk_stop_tasks": `{"state":"OPEN","reason":"r"}`, "bulk_start_tasks": `{"state":"OPEN"}`,
	"bulk_cancel_tasks": `{"state":"OPEN"}`, "bulk_retry_tasks": `{"state":"OPEN"}`,
}

// itemOf is a valid item of the list field named name.
func itemOf(name string, items *jsonschema.Schema) any {
	switch {
	case name == "add_children":
		return map[string]any{"type": "t"}
	case name == "grants":
		return map[string]any{"resource": "/", "permission": "read"}
	case len(items.Enum) > 0:
		return items.Enum[0]
	case items.Type == "integer":
		return 1
	}
	return "x"
}

// probe is an input one field of which is at or just past a bound its
// schema states.
type probe struct {
	field string // the field, as a refusal names it
	what  string // the bound
	past  any    // a value just past it (nil: none)
	at    any    // a value at it (nil: none)
	// set puts a value of the field into an input.
	set func(in map[string]any, v any)
}

// branches are the schemas a property may take: itself, or its anyOf's.
func branches(s *jsonschema.Schema) []*jsonschema.Schema {
	if len(s.AnyOf) == 0 {
		return []*jsonschema.Schema{s}
	}
	var out []*jsonschema.Schema
	for _, b := range s.AnyOf {
		if b.Type != "null" {
			out = append(out, b)
		}
	}
	return out
}

// probesOf are the probes of every bound schema s (an object's) states of
// its properties; path names the object, set puts a field into it.
func probesOf(s *jsonschema.Schema, path string, put func(in map[string]any, name string, v any)) []probe {
	var out []probe
	for name, p := range s.Properties {
		if name == "payload" || name == "metadata" || name == "content" {
			continue // a JSON value: its bounds are ValidateJSON's (TestJSONBounds)
		}
		field := name
		if path != "" {
			field = path + "." + name
		}
		set := func(in map[string]any, v any) { put(in, name, v) }
		for _, b := range branches(p) {
			out = append(out, scalarProbes(b, field, set)...)
			if b.Type != "array" || b.MaxItems == nil {
				continue
			}
			n := *b.MaxItems
			list := func(k int, item any) []any { return slices.Repeat([]any{item}, k) }
			item := itemOf(name, b.Items)
			out = append(out, probe{field: field, what: fmt.Sprintf("maxItems %d", n), past: list(n+1, item), at: list(n, item), set: set})
			for _, ip := range scalarProbes(b.Items, field, nil) {
				ip.set = set
				ip.past, ip.at = list(1, ip.past), nil
				out = append(out, ip)
			}
			if b.Items.Type == "object" {
				out = append(out, probesOf(b.Items, field+"[0]", func(in map[string]any, sub string, v any) {
					it := map[string]any{}
					for k, x := range item.(map[string]any) {
						it[k] = x
					}
					it[sub] = v
					put(in, name, []any{it})
				})...)
			}
		}
	}
	return out
}

// scalarProbes are the probes of the bounds of a number or a text.
func scalarProbes(b *jsonschema.Schema, field string, set func(map[string]any, any)) []probe {
	var out []probe
	step := 1.0
	if b.Type == "number" {
		step = 0.5
	}
	if b.Minimum != nil {
		out = append(out, probe{field: field, what: fmt.Sprintf("minimum %v", *b.Minimum), past: *b.Minimum - step, at: *b.Minimum, set: set})
	}
	if b.Maximum != nil {
		out = append(out, probe{field: field, what: fmt.Sprintf("maximum %v", *b.Maximum), past: *b.Maximum + step, at: *b.Maximum, set: set})
	}
	if b.Type != "string" {
		return out
	}
	if len(b.Enum) > 0 {
		return append(out, probe{field: field, what: "enum", past: "not-one-of-them", at: b.Enum[len(b.Enum)-1], set: set})
	}
	if b.MaxLength != nil {
		out = append(out, probe{field: field, what: fmt.Sprintf("maxLength %d", *b.MaxLength),
			past: strings.Repeat("x", *b.MaxLength+1), at: strings.Repeat("x", *b.MaxLength), set: set})
	}
	if b.MinLength != nil {
		out = append(out, probe{field: field, what: fmt.Sprintf("minLength %d", *b.MinLength), past: "", set: set})
	}
	switch b.Pattern {
	case "":
	case `\S`:
		out = append(out, probe{field: field, what: "pattern " + b.Pattern, past: " \t", set: set})
	case "^[^/]+$":
		out = append(out, probe{field: field, what: "pattern " + b.Pattern, past: "a/b", set: set})
	case cks.TaskTypePattern:
		out = append(out, probe{field: field, what: "pattern " + b.Pattern, past: "build ", at: "build", set: set})
	case cks.ProcessKindPattern:
		out = append(out, probe{field: field, what: "pattern " + b.Pattern, past: "a/b", at: "a-b", set: set})
	case cks.ConcurrencyKeyPattern:
		out = append(out, probe{field: field, what: "pattern " + b.Pattern, past: "open ai", at: "openai:gpt-5", set: set})
	case cks.OutputStreamPattern:
		out = append(out, probe{field: field, what: "pattern " + b.Pattern, past: "std out", at: "stderr", set: set})
	case cks.LimitPatternPattern:
		out = append(out, probe{field: field, what: "pattern " + b.Pattern, past: "open*ai", at: "openai:*", set: set})
	case cks.CostPattern:
		out = append(out, probe{field: field, what: "pattern " + b.Pattern, past: "1e3", at: "0.0125", set: set})
	default:
		panic("a pattern the test does not probe: " + b.Pattern)
	}
	return out
}

// admitServices are the services of a hub on a store of s's backend.
func admitServices(t *testing.T, open backendtest.Opener) *ops.Services {
	c := clock.NewFake(backendtest.T0)
	s := open(t, driver.WithClock(c))
	return &ops.Services{Tasks: s.Tasks, Objects: s.Objects, Liveness: liveness.NewService(s.Driver(), c), Principals: s.Principals,
		Schedules: s.Schedules, Clock: c}
}

// admitted stops a call at its Ready hook, which runs once the input is
// admitted, just before the call reaches the services.
type admitted struct{}

// admitCall calls op on req as ops.Call does up to the call itself: nil
// when req is admitted (the call would now reach the services), else the
// refusal, which then came from before the call.
func admitCall(ctx context.Context, svc *ops.Services, op ops.Operation, req ops.Request) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(admitted); !ok {
				panic(r)
			}
			err = nil
		}
	}()
	req.Ready = func(any) { panic(admitted{}) }
	_, err = ops.Call(ctx, svc, op, req)
	if err == nil {
		return errors.New("the call ran without its Ready hook")
	}
	return err
}

// inputOf is the JSON of base with probe p's value v.
func inputOf(t *testing.T, base string, p probe, v any) []byte {
	t.Helper()
	var in map[string]any
	if err := json.Unmarshal([]byte(base), &in); err != nil {
		t.Fatal(err)
	}
	p.set(in, v)
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSchemasStateTheBounds: for every bound an operation's input schema
// states (minimum, maximum, maxLength, minLength, pattern, enum, maxItems,
// of every field, a list's items and an object's in a list included), a
// value just past it is refused before the call, as invalid_argument
// naming the field, and a value at it is not refused for that bound: the
// schema says exactly what the hub holds the input to (both come from the
// declarations of rules.go). And every list of every input states a bound
// (a list field without a declaration is bounded at 0 items: nothing
// forgotten is unbounded).
func TestSchemasStateTheBounds(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		svc := admitServices(t, open)
		ctx := auth.WithLocalOperator(context.Background())
		n := 0
		for _, op := range ops.All() {
			sp := op.Spec()
			if sp.Stream {
				continue
			}
			base, ok := bases[sp.Name]
			if !ok {
				t.Errorf("%s: no base input in the test", sp.Name)
				continue
			}
			if err := admitCall(ctx, svc, op, ops.Request{Args: []byte(base)}); err != nil {
				t.Errorf("%s: the base %s is refused: %v", sp.Name, base, err)
				continue
			}
			for _, p := range probesOf(op.InputSchema(), "", func(in map[string]any, name string, v any) { in[name] = v }) {
				b := base
				if fb, ok := filterBases[sp.Name]; ok && !slices.Contains([]string{"task_ids", "reason", "deadline", "wait"}, p.field) {
					b = fb
				}
				n++
				args := inputOf(t, b, p, p.past)
				err := admitCall(ctx, svc, op, ops.Request{Args: args})
				var fe *cks.FieldError
				if err == nil || ops.FailureOf(ctx, nil, "test", err).Code != cks.CodeInvalidArgument || !errors.As(err, &fe) || fe.Field != p.field {
					t.Errorf("%s %s: just past its %s (%.120s): %v, want invalid_argument naming %s", sp.Name, p.field, p.what, args, err, p.field)
					continue
				}
				if p.at == nil {
					continue
				}
				atArgs := inputOf(t, b, p, p.at)
				if atErr := admitCall(ctx, svc, op, ops.Request{Args: atArgs}); atErr != nil && atErr.Error() == err.Error() {
					t.Errorf("%s %s: at its %s (%.120s) refused as past it: %v", sp.Name, p.field, p.what, atArgs, atErr)
				}
			}
			noUnboundedList(t, sp.Name, op.InputSchema(), "")
		}
		if n < 150 {
			t.Fatalf("only %d bounds probed: the schemas lost their bounds", n)
		}
	})
}

// noUnboundedList fails for an array of schema s (but a JSON value's) that
// states no maxItems.
func noUnboundedList(t *testing.T, op string, s *jsonschema.Schema, path string) {
	t.Helper()
	for name, p := range s.Properties {
		if name == "payload" || name == "metadata" || name == "content" {
			continue
		}
		for _, b := range branches(p) {
			if b.Type == "array" && b.MaxItems == nil {
				t.Errorf("%s: the list %s%s states no maxItems", op, path, name)
			}
			if b.Type == "array" && b.Items != nil && b.Items.Type == "object" {
				noUnboundedList(t, op, b.Items, path+name+"[].")
			}
		}
	}
}

// TestEveryRefusalIsAdmits: a call is refused as invalid_argument in one
// place, before it reaches a service (ops.Call's admit: the permission,
// one decode, one validation), whatever rule refuses it and whichever
// surface sent it: the rules the services held before (a blank stop
// reason, a lease's token, a cursor_key's form, a stopped_first order with
// a state, a process kind, a grant, a research question, a bulk selection
// of nothing), those the surfaces held (text no store takes in a path or a
// query, a body that is no object), the decoder's, and the declared
// bounds. Each refusal names its field, and none reaches the call.
func TestEveryRefusalIsAdmits(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		svc := admitServices(t, open)
		ctx := auth.WithLocalOperator(context.Background())
		for _, c := range []struct {
			op, args, field string
		}{
			// Once the ledger's, the liveness service's, the pipeline's,
			// auth's and the calls' own.
			{"stop_task", `{"task_id":1,"reason":" \t"}`, "reason"},
			{"stop_task", `{"task_id":1,"reason":"r","deadline":"soon"}`, "deadline"},
			{"stop_task", `{"task_id":1,"reason":"r","deadline":"11m"}`, "deadline"},
			{"answer_task", `{"task_id":1,"text":" "}`, "text"},
			{"request_input", `{"task_id":1,"lease_token":"x","question":"\n"}`, "question"},
			{"touch_task", `{"task_id":1}`, "lease_token"},
			{"mark_running", `{"task_id":1,"lease_token":""}`, "lease_token"},
			{"complete_task", `{"task_id":1,"result":"r"}`, "lease_token"},
			{"confirm_abort", `{"task_id":1}`, "lease_token"},
			{"claim_tasks", `{"n":0}`, "n"},
			{"claim_tasks", `{"lease_s":0.5}`, "lease_s"},
			{"claim_review", `{"task_id":1,"lease_s":86401}`, "lease_s"},
			{"add_evidence", `{"task_id":1,"lease_token":"x","kind":"","body":"b"}`, "kind"},
			{"record_decision", `{"task_id":1,"lease_token":"x","kind":"k","derived_from_revision":0}`, "derived_from_revision"},
			{"reuse_workspace", `{"task_id":1,"lease_token":"x","path":"","derived_from_revision":1}`, "path"},
			{"task_stats", `{"minutes":10081}`, "minutes"},
			{"list_tasks", `{"cursor_key":"2026-01-01T00:00:00.000000Z","sort":"updated"}`, "cursor_key"},
			{"list_tasks", `{"limit":0}`, "limit"},
			{"list_tasks", `{"sort":"priority","cursor":5,"cursor_key":"high"}`, "cursor_key"},
			{"list_tasks", `{"order":"stopped_first","state":"OPEN"}`, "order"},
			{"list_tasks", `{"state":["OPEN","DONE"]}`, "state"},
			{"list_tasks", `{"stopped_longer_than":"soon"}`, "stopped_longer_than"},
			{"list_tasks", `{"parent_id":1,"state":"OPEN"}`, "parent_id"},
			{"count_tasks", `{"state":"nope"}`, "state"},
			{"bulk_cancel_tasks", `{}`, "task_ids"},
			{"bulk_cancel_tasks", `{"task_ids":[1],"state":"OPEN"}`, "task_ids"},
			{"bulk_cancel_tasks", `{"task_ids":[0]}`, "task_ids"},
			{"bulk_start_tasks", `{"state":"OPEN","limit":501}`, "limit"},
			{"bulk_stop_tasks", `{"task_ids":[1],"reason":" "}`, "reason"},
			{"bulk_stop_tasks", `{"task_ids":[1],"reason":"r","deadline":"1h"}`, "deadline"},
			{"update_task", `{"task_id":1}`, "patch"},
			{"update_task", `{"task_id":1,"add_children":[{"type":""}]}`, "add_children[0].type"},
			{"update_task", `{"task_id":1,"add_depends_on":[2],"remove_depends_on":[2]}`, "add_depends_on"},
			{"update_task", `{"task_id":1,"metadata":[1]}`, "metadata"},
			{"update_task", `{"task_id":1,"title":"t","deadline":"later"}`, "deadline"},
			{"create_task", `{"type":"t","dedupe_once":true}`, "dedupe_once"},
			{"create_task", `{"type":"t","payload":{"n":1e999999}}`, "payload"},
			{"create_task", `{"type":"t","max_attempts":0}`, "max_attempts"},
			{"create_task", `{"type":"t","delay":"soon"}`, "delay"},
			{"create_task", `{"type":"t","delay":"1m","run_after":"2026-12-24T18:00:00Z"}`, "run_after"},
			{"create_task", `{"type":"t","run_after":"tomorrow"}`, "run_after"},
			{"create_task", `{"type":"t","attempt_timeout":"-1m"}`, "attempt_timeout"},
			{"create_task", `{"type":"t","attempt_timeout":"0s"}`, "attempt_timeout"},
			{"create_task", `{"type":"t","attempt_timeout":"10000h"}`, "attempt_timeout"},
			{"create_task", `{"type":"t","expires_at":"soon"}`, "expires_at"},
			{"create_task", `{"type":"t","traceparent":"00-abc-def-01"}`, "traceparent"},
			{"create_task", `{"type":"t","traceparent":"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}`, "traceparent"},
			{"create_task", `{"type":"t","traceparent":"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"}`, "traceparent"},
			{"create_task", `{"type":"t","traceparent":"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`, "traceparent"},
			{"update_task", `{"task_id":1,"attempt_timeout":"0"}`, "attempt_timeout"},
			{"update_task", `{"task_id":1,"delay":"-5m"}`, "delay"},
			{"update_task", `{"task_id":1,"delay":"1m","run_after":"2026-12-24T18:00:00Z"}`, "run_after"},
			{"update_task", `{"task_id":1,"run_after":"next week"}`, "run_after"},
			{"update_task", `{"task_id":1,"expires_at":"never"}`, "expires_at"},
			{"update_task", `{"task_id":1,"add_children":[{"type":"c","attempt_timeout":"1ms"}]}`, "add_children[0].attempt_timeout"},
			{"list_processes", `{"kind":"no pe"}`, "kind"},
			{"list_processes", `{"cursor":"not-a-cursor"}`, "cursor"},
			{"process_status", `{"process_kind":"no/pe"}`, "process_kind"},
			{"report_process", `{"process_kind":"summarize","instance_id":"a b"}`, "instance_id"},
			{"report_process", `{"process_kind":"summarize","instance_id":"i","liveness_interval_s":0.5}`, "liveness_interval_s"},
			{"report_process", `{"process_kind":"summarize","instance_id":"i","current_task_id":1,"current_task_type":"a b"}`, "current_task_type"},
			{"request_process_stop", `{"process_kind":"a/b"}`, "process_kind"},
			{"agent_status", `{"agent_id":"no_such"}`, "agent_id"},
			{"submit_research", `{"question":" "}`, "question"},
			{"submit_research", `{"question":"q","corpus":"relative/dir"}`, "corpus"},
			{"list_objects", `{"limit":1001}`, "limit"},
			{"write_object_version", `{"object_id":1,"base_version":1,"content":[1]}`, "content"},
			{"write_object_version", `{"object_id":1,"base_version":0,"content":{}}`, "base_version"},
			{"create_token", `{"name":"n","grants":[{"resource":"/","permission":"write"}]}`, "permission"},
			{"create_token", `{"name":"n"}`, "grants"},
			{"create_token", `{"grants":[{"resource":"/","permission":"read"}]}`, "name"},
			{"create_token", `{"task_id":-1}`, "task_id"},
			{"revoke_session", `{"id":""}`, "id"},
			{"check_stored", `{"what":"nope"}`, "what"},
			{"create_schedule", `{"name":"","cron":"@hourly","task":{"type":"t"}}`, "name"},
			{"create_schedule", `{"name":"a/b","cron":"@hourly","task":{"type":"t"}}`, "name"},
			{"create_schedule", `{"name":"` + strings.Repeat("n", 101) + `","cron":"@hourly","task":{"type":"t"}}`, "name"},
			{"create_schedule", `{"name":"s","cron":"61 * * * *","task":{"type":"t"}}`, "cron"},
			{"create_schedule", `{"name":"s","cron":"@every 10ms","task":{"type":"t"}}`, "cron"},
			{"create_schedule", `{"name":"s","cron":"","task":{"type":"t"}}`, "cron"},
			{"create_schedule", `{"name":"s","cron":"@hourly","time_zone":"Mars/Olympus","task":{"type":"t"}}`, "time_zone"},
			{"create_schedule", `{"name":"s","cron":"@hourly","misfire":"catch_up","task":{"type":"t"}}`, "misfire"},
			{"create_schedule", `{"name":"s","cron":"@hourly","task":{"type":""}}`, "task.type"},
			{"create_schedule", `{"name":"s","cron":"@hourly","task":{"type":"t","priority":1001}}`, "task.priority"},
			{"create_schedule", `{"name":"s","cron":"@hourly","task":{"type":"t","bogus":1}}`, "bogus"},
			{"create_schedule", `{"name":"s","cron":"@hourly"}`, "task.type"},
			{"get_schedule", `{"name":"a b"}`, "name"},
			// Once the surfaces' (text no store takes), and the decoder's.
			{"cancel_task", `{"task_id":1,"reason":"a\u0000b"}`, "reason"},
			{"list_tasks", `{"type":["ok","a\u0000b"]}`, "type"},
			{"cancel_task", `{"task_id":1,"bogus":1}`, "bogus"},
			{"create_task", `{"type":"t","priority":"high"}`, "priority"},
			{"update_task", `{"task_id":1,"add_children":` + strings.Repeat("[1", 1) + strings.Repeat(",1", 200) + `]}`, "add_children"},
		} {
			op, ok := ops.Lookup(c.op)
			if !ok {
				t.Fatalf("no operation %s", c.op)
			}
			err := admitCall(ctx, svc, op, ops.Request{Args: []byte(c.args)})
			var fe *cks.FieldError
			if err == nil || ops.FailureOf(ctx, nil, "test", err).Code != cks.CodeInvalidArgument || !errors.As(err, &fe) || fe.Field != c.field {
				t.Errorf("%s %s: %v, want invalid_argument naming %s before the call", c.op, c.args, err, c.field)
			}
		}
		// Over HTTP: path and query text, a query past a list's bound, a
		// body that is no object, a body naming a path field.
		q := func(s string) map[string][]string { return map[string][]string{"state": {s}} }
		for _, c := range []struct {
			op    string
			path  map[string]string
			query map[string][]string
			body  string
			field string
		}{
			{"get_task", map[string]string{"task_id": "abc"}, nil, "", "task_id"},
			{"process_status", map[string]string{"process_kind": "a\xffb"}, nil, "", "process_kind"},
			{"revoke_token", map[string]string{"id": "a\x00b"}, nil, "", "id"},
			{"list_tasks", nil, map[string][]string{"limit": {"0"}}, "", "limit"},
			{"list_tasks", nil, map[string][]string{"cursor_key": {"5"}, "sort": {"priority"}}, "", "cursor_key"},
			{"list_tasks", nil, map[string][]string{"a\x00": {"1"}}, "", "query"},
			{"list_tasks", nil, q(strings.Repeat("OPEN,", 101)), "", "state"},
			{"stop_task", map[string]string{"task_id": "1"}, nil, `{"task_id":2,"reason":"r"}`, "task_id"},
			{"stop_task", map[string]string{"task_id": "1"}, nil, `["r"]`, ""},
			{"start_task", map[string]string{"task_id": "1"}, nil, `null`, ""},
		} {
			op, _ := ops.Lookup(c.op)
			err := admitCall(ctx, svc, op, ops.Request{Args: []byte(c.body), Query: c.query,
				PathValue: func(name string) string { return c.path[name] }})
			var fe *cks.FieldError
			if err == nil || ops.FailureOf(ctx, nil, "test", err).Code != cks.CodeInvalidArgument ||
				c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field) {
				t.Errorf("HTTP %s %v %v %s: %v, want invalid_argument naming %q before the call", c.op, c.path, c.query, c.body, err, c.field)
			}
		}
	})
}
