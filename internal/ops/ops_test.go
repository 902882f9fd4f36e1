package ops_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// mcpTools are the MCP tools: the names the seeds and the first build fixed,
// the worker's (the executor and review operations, issue 25), the
// knowledge store's, retry_task and the bulk operations (issue 24) and the
// task types' flow control (issue 42); the
// table must keep them exactly.
var mcpTools = []string{
	"list_processes", "process_status", "request_process_stop", "report_process",
	"list_tasks", "task_stats", "list_unclaimed_types", "get_task", "create_task", "answer_task", "cancel_task", "stop_task", "start_task", "update_task",
	"retry_task", "bulk_stop_tasks", "bulk_start_tasks", "bulk_cancel_tasks", "bulk_retry_tasks",
	"claim_tasks", "mark_running", "touch_task", "add_evidence", "append_output", "get_output", "record_decision", "reuse_workspace", "report_usage", "confirm_abort",
	"complete_task", "fail_task", "request_input", "claim_review", "approve_review", "reject_review",
	"list_agents", "agent_status", "start_agent", "stop_agent",
	"pause_type", "resume_type", "list_paused_types", "set_limit", "list_limits", "delete_limit", "get_usage",
	"create_schedule", "list_schedules", "get_schedule", "pause_schedule", "resume_schedule", "trigger_schedule", "delete_schedule",
	"submit_research", "list_objects", "get_object", "list_object_versions", "write_object_version",
}

// TestTableShape: names are unique snake_case, routes are unique and under
// /v1 (but /metrics), every permission is a permission, every resource
// template names a node of the resource tree, and the MCP tools are exactly
// the fixed ones.
func TestTableShape(t *testing.T) {
	names := map[string]bool{}
	routes := map[string]string{}
	var tools []string
	for _, op := range ops.All() {
		sp := op.Spec()
		if names[sp.Name] || sp.Name != strings.ToLower(sp.Name) || strings.ContainsAny(sp.Name, " -/") {
			t.Errorf("name %q: duplicate or not snake_case", sp.Name)
		}
		names[sp.Name] = true
		if sp.Surfaces&ops.HTTP != 0 {
			r := sp.Method + " " + sp.Path
			if other, dup := routes[r]; dup {
				t.Errorf("%s and %s share the route %s", other, sp.Name, r)
			}
			routes[r] = sp.Name
			if !strings.HasPrefix(sp.Path, "/v1/") && sp.Name != "metrics" {
				t.Errorf("%s: path %s is not under /v1", sp.Name, sp.Path)
			}
		}
		if !slices.Contains(auth.Permissions, sp.Permission) {
			t.Errorf("%s: permission %q", sp.Name, sp.Permission)
		}
		res := strings.NewReplacer("{task_id}", "1", "{object_id}", "1", "{agent_id}", "lease_reaper", "{process_kind}", "critic", "{type}", "build", "{name}", "nightly").Replace(sp.Resource)
		if err := auth.ValidResource(res); err != nil {
			t.Errorf("%s: resource %s: %v", sp.Name, sp.Resource, err)
		}
		if sp.Surfaces&ops.MCP != 0 {
			tools = append(tools, sp.Name)
		}
		if sp.Stream != (op.InputType() == nil) {
			t.Errorf("%s: a stream has no input type, and only a stream", sp.Name)
		}
	}
	slices.Sort(tools)
	want := slices.Sorted(slices.Values(mcpTools))
	if !slices.Equal(tools, want) {
		t.Errorf("MCP tools %v, want %v", tools, want)
	}
	for _, name := range []string{"claim_tasks", "claim_review", "create_token"} {
		if op, ok := ops.Lookup(name); !ok || !op.Spec().Secret {
			t.Errorf("%s is not marked Secret (its answer carries a lease or bearer token)", name)
		}
	}
}

// openAPIParam is a parameter of an OpenAPI operation.
type openAPIParam struct {
	Name    string         `json:"name"`
	In      string         `json:"in"`
	Schema  map[string]any `json:"schema"`
	Explode bool           `json:"explode"`
}

// sample returns a valid-looking input of op: every path and scalar field
// set, so an HTTP round trip has something to carry.
func sample(t *testing.T, op ops.Operation) any {
	t.Helper()
	in := op.NewInput()
	fillSample(reflect.ValueOf(in).Elem(), op.InputSchema())
	return in
}

// fillSample fills the fields of struct v, whose schema is s (nil: none
// known), with sample values; a struct field is filled in turn.
func fillSample(v reflect.Value, s *jsonschema.Schema) {
	for _, f := range reflect.VisibleFields(v.Type()) {
		if !f.IsExported() || f.Anonymous || f.Tag.Get("json") == "-" {
			continue
		}
		fv := v.FieldByIndex(f.Index)
		if f.Type == reflect.TypeFor[json.RawMessage]() {
			fv.Set(reflect.ValueOf(json.RawMessage(`{"k":1}`)))
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		var prop *jsonschema.Schema
		if s != nil {
			prop = s.Properties[name]
		}
		if enum := enumOf(prop); len(enum) > 0 { // a closed vocabulary
			switch fv.Kind() {
			case reflect.String:
				fv.SetString(enum[0])
			case reflect.Slice:
				fv.Set(reflect.ValueOf(enum[:min(2, len(enum))]).Convert(fv.Type()))
			}
			continue
		}
		switch fv.Kind() {
		case reflect.String:
			fv.SetString("x-" + strings.ToLower(f.Name))
			if prop != nil && prop.Pattern == cks.CostPattern {
				fv.SetString("0.5")
			}
		case reflect.Int, reflect.Int64:
			fv.SetInt(7)
		case reflect.Bool:
			fv.SetBool(true)
		case reflect.Slice:
			if fv.Type().Elem().Kind() == reflect.String {
				fv.Set(reflect.ValueOf([]string{"a", "b"}).Convert(fv.Type()))
			}
		case reflect.Struct:
			if fv.Type() != reflect.TypeFor[time.Time]() {
				fillSample(fv, prop)
			}
		}
	}
}

// enumOf is the enum of a text property's schema s (of its items, of its
// one-or-a-list branches), or none.
func enumOf(s *jsonschema.Schema) []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, v := range s.Enum {
		out = append(out, v.(string))
	}
	if len(out) > 0 {
		return out
	}
	if out = enumOf(s.Items); len(out) > 0 {
		return out
	}
	for _, b := range s.AnyOf {
		if out = enumOf(b); len(out) > 0 {
			return out
		}
	}
	return nil
}

// TestHTTPRoundTrip: for every HTTP operation, the request a client builds
// from an input (HTTPRequest) is read back by the server (HTTPInput) as the
// same input: the path, query and body carry every field.
func TestHTTPRoundTrip(t *testing.T) {
	for _, op := range ops.All() {
		sp := op.Spec()
		if sp.Stream || sp.Surfaces&ops.HTTP == 0 {
			continue
		}
		t.Run(sp.Name, func(t *testing.T) {
			in := sample(t, op)
			method, target, body, err := ops.HTTPRequest(op, in)
			if err != nil {
				t.Fatal(err)
			}
			if method != sp.Method {
				t.Fatalf("method %s, want %s", method, sp.Method)
			}
			u, err := url.Parse(target)
			if err != nil {
				t.Fatal(err)
			}
			// Match the path against the pattern as the mux would.
			mux := http.NewServeMux()
			var got any
			var gotErr error
			mux.HandleFunc(sp.Method+" "+sp.Path, func(w http.ResponseWriter, r *http.Request) {
				got, gotErr = ops.HTTPInput(op, r.PathValue, r.URL.Query(), body)
			})
			req, _ := http.NewRequest(method, u.String(), nil)
			mux.ServeHTTP(&nopWriter{h: http.Header{}}, req)
			if gotErr != nil || got == nil {
				t.Fatalf("%s %s: %v (matched %v)", method, target, gotErr, got != nil)
			}
			if !reflect.DeepEqual(got, in) {
				a, _ := json.Marshal(in)
				b, _ := json.Marshal(got)
				t.Fatalf("%s %s %s: read back %s, want %s", method, target, body, b, a)
			}
		})
	}
}

type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nopWriter) WriteHeader(int)             {}

// TestHTTPInputRefusals: a body naming a path field, an unknown field and a
// path integer that is no integer are refused naming the field.
func TestHTTPInputRefusals(t *testing.T) {
	path := func(v string) func(string) string { return func(string) string { return v } }
	for _, c := range []struct {
		op    ops.Operation
		path  string
		body  string
		query url.Values
		field string
	}{
		{ops.StopTask, "5", `{"task_id":6,"reason":"r"}`, nil, "task_id"},
		{ops.StopTask, "5", `{"reason":"r","deadline_seconds":2}`, nil, "deadline_seconds"},
		{ops.StopTask, "x", `{"reason":"r"}`, nil, "task_id"},
		{ops.UpdateTask, "5", `{"priority":"high"}`, nil, "priority"},
		{ops.ListTasks, "", ``, url.Values{"limit": {"lots"}}, "limit"},
	} {
		_, err := ops.HTTPInput(c.op, path(c.path), c.query, []byte(c.body))
		var fe *cks.FieldError
		if !errorsAs(err, &fe) || fe.Field != c.field {
			t.Errorf("%s %q %s %v: %v, want a FieldError naming %s", c.op.Spec().Name, c.path, c.body, c.query, err, c.field)
		}
	}
}

func errorsAs(err error, fe **cks.FieldError) bool {
	f, ok := err.(*cks.FieldError)
	*fe = f
	return ok
}

// TestOpenAPI: the document is valid JSON in the OpenAPI 3.1 shape, names
// its server, lists every HTTP operation under its path and method with
// its operationId and a tag, its refusals (4XX, 5XX) and describes the
// body of every operation that takes one; a list in the query is an
// exploded array. A Task (and every other record that recurs) is one
// component, referenced: its schema is written once.
func TestOpenAPI(t *testing.T) {
	b, err := ops.OpenAPI(ops.All(), "test", "http://127.0.0.1:7433")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
		Servers []struct {
			URL string `json:"url"`
		} `json:"servers"`
		Paths map[string]map[string]struct {
			OperationID string         `json:"operationId"`
			Tags        []string       `json:"tags"`
			Permission  string         `json:"x-cks-permission"`
			RequestBody map[string]any `json:"requestBody"`
			Parameters  []openAPIParam `json:"parameters"`
			Responses   map[string]any `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	// Every operation's tag is one the document defines (the linter's
	// operation-tag-defined, which only CI's Spectral runs otherwise).
	var global struct {
		Tags []struct {
			Name string `json:"name"`
		} `json:"tags"`
	}
	if err := json.Unmarshal(b, &global); err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, tg := range global.Tags {
		defined[tg.Name] = true
	}
	for path, methods := range doc.Paths {
		for method, op := range methods {
			for _, tg := range op.Tags {
				if !defined[tg] {
					t.Errorf("%s %s: tag %q is not among the document's tags", method, path, tg)
				}
			}
		}
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "test" || len(doc.Servers) != 1 || doc.Servers[0].URL != "http://127.0.0.1:7433" {
		t.Fatalf("openapi %q version %q servers %v", doc.OpenAPI, doc.Info.Version, doc.Servers)
	}
	var comps struct {
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Error struct {
							Properties map[string]struct {
								Description string `json:"description"`
							} `json:"properties"`
						} `json:"error"`
					} `json:"properties"`
				} `json:"Error"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &comps); err != nil {
		t.Fatal(err)
	}
	if d := comps.Components.Schemas.Error.Properties.Error.Properties["field"].Description; !strings.Contains(d, "input field") {
		t.Errorf("the Error schema's field says %q; want the input field at fault", d)
	}
	if n := strings.Count(string(b), `"lease_expires_at"`); n != 2 {
		t.Errorf("a task's schema is written %d times, want twice (components/schemas/Task and ClaimedTask)", n)
	}
	if n := strings.Count(string(b), `"$ref": "#/components/schemas/Task"`); n < 15 {
		t.Errorf("components/schemas/Task is referenced %d times", n)
	}
	n := 0
	for _, op := range ops.All() {
		sp := op.Spec()
		o, ok := doc.Paths[sp.Path][strings.ToLower(sp.Method)]
		if !ok || o.OperationID != sp.Name || o.Permission != sp.Permission {
			t.Errorf("%s: %s %s missing or wrong: %+v", sp.Name, sp.Method, sp.Path, o)
			continue
		}
		n++
		if len(o.Responses) < 3 || o.Responses["4XX"] == nil || o.Responses["5XX"] == nil || len(o.Tags) != 1 {
			t.Errorf("%s: responses %v, tags %v; want success, 4XX and 5XX, and a tag", sp.Name, o.Responses, o.Tags)
		}
		for _, w := range strings.Split(strings.Trim(strings.ReplaceAll(sp.Path, "}", "{"), "{"), "{") {
			if !strings.HasPrefix(w, "/") && !slices.ContainsFunc(o.Parameters, func(p openAPIParam) bool {
				return p.Name == w && p.In == "path"
			}) {
				t.Errorf("%s: no path parameter %s", sp.Name, w)
			}
		}
		if !sp.Stream && sp.Method != "GET" && sp.Method != "DELETE" {
			props, _ := op.InputSchema().Properties, 0
			if len(props) > len(o.Parameters) && o.RequestBody == nil {
				t.Errorf("%s: input with body fields but no requestBody", sp.Name)
			}
		}
	}
	if n != len(ops.All()) {
		t.Errorf("%d of %d operations in the document", n, len(ops.All()))
	}
	// A list in the query repeats its parameter: list_tasks' state (one
	// state or a list, in a body) is an array of states there.
	for _, p := range doc.Paths["/v1/tasks"]["get"].Parameters {
		if p.Name != "state" {
			continue
		}
		items, _ := p.Schema["items"].(map[string]any)
		if p.Schema["type"] != "array" || !p.Explode || items == nil || len(items["enum"].([]any)) != len(ledger.All) {
			t.Errorf("GET /v1/tasks state parameter %+v, want an exploded array of the states", p)
		}
	}
}

// TestSchemasResolve: every input and output schema is a JSON Schema the
// validator accepts, and validates a sample input (the MCP clients and
// OpenAPI readers get these schemas).
func TestSchemasResolve(t *testing.T) {
	for _, op := range ops.All() {
		if op.Spec().Stream {
			continue
		}
		in, err := op.InputSchema().Resolve(nil)
		if err != nil {
			t.Errorf("%s: input schema: %v", op.Spec().Name, err)
			continue
		}
		if _, err := op.OutputSchema().Resolve(nil); err != nil {
			t.Errorf("%s: output schema: %v", op.Spec().Name, err)
		}
		raw, _ := json.Marshal(sample(t, op))
		var v map[string]any
		json.Unmarshal(raw, &v)
		if err := in.Validate(v); err != nil {
			t.Errorf("%s: sample input %s: %v", op.Spec().Name, raw, err)
		}
	}
}

// TestHints: every operation's MCP annotations are set deliberately, none
// left to the protocol's defaults (which call an unannotated tool
// destructive and open-world): OpenWorld on every one, Destructive on every
// one that is not read-only, and a read-only one idempotent too. The hints
// the issue found missing are what the table means.
func TestHints(t *testing.T) {
	for _, op := range ops.All() {
		sp := op.Spec()
		if sp.Stream {
			continue
		}
		h := sp.Hints
		if h.OpenWorld == nil {
			t.Errorf("%s: OpenWorld hint unset (cks is a closed world: set it false)", sp.Name)
		}
		if !h.ReadOnly && h.Destructive == nil {
			t.Errorf("%s: not read-only, and its Destructive hint is unset (the MCP default is true)", sp.Name)
		}
		if h.ReadOnly && (!h.Idempotent || h.Destructive != nil) {
			t.Errorf("%s: read-only, so idempotent and not marked destructive either way; got %+v", sp.Name, h)
		}
	}
	for name, destructive := range map[string]bool{
		"answer_task": false, "create_task": false, "start_agent": false, "start_task": false, "update_task": true,
		"cancel_task": true, "stop_task": true, "bulk_stop_tasks": true, "request_process_stop": true,
		"write_object_version": false, "complete_task": false,
	} {
		op, ok := ops.Lookup(name)
		if !ok {
			t.Fatalf("no operation %s", name)
		}
		if d := op.Spec().Hints.Destructive; d == nil || *d != destructive {
			t.Errorf("%s: destructive hint %v, want %v", name, d, destructive)
		}
	}
}

// TestSweeperToolsSayWhatASweeperIs: a model reading the sweeper tools
// learns what a sweeper is and that a standalone agent process is stopped
// with request_process_stop, not stop_agent.
func TestSweeperToolsSayWhatASweeperIs(t *testing.T) {
	for _, name := range []string{"list_agents", "agent_status", "start_agent", "stop_agent"} {
		op, _ := ops.Lookup(name)
		d := op.Spec().Description
		for _, want := range []string{"A sweeper is a background loop", "lease_reaper", "request_process_stop"} {
			if !strings.Contains(d, want) {
				t.Errorf("%s: description lacks %q", name, want)
			}
		}
	}
}

// TestNoBareSchemas: no property of an input or output schema is the bare
// schema true (or false), which strict MCP validators refuse: a value of
// any type is described as such.
func TestNoBareSchemas(t *testing.T) {
	var walk func(name, path string, v any)
	walk = func(name, path string, v any) {
		switch x := v.(type) {
		case bool:
			t.Errorf("%s: %s is the bare schema %v", name, path, x)
		case map[string]any:
			if props, ok := x["properties"].(map[string]any); ok {
				for k, p := range props {
					walk(name, path+"."+k, p)
				}
			}
			if items, ok := x["items"]; ok {
				walk(name, path+"[]", items)
			}
			for _, key := range []string{"anyOf", "oneOf", "allOf"} {
				branches, _ := x[key].([]any)
				for i, b := range branches {
					walk(name, fmt.Sprintf("%s.%s[%d]", path, key, i), b)
				}
			}
		}
	}
	for _, op := range ops.All() {
		if op.Spec().Stream {
			continue
		}
		for side, s := range map[string]any{"input": op.InputSchema(), "output": op.OutputSchema()} {
			b, _ := json.Marshal(s)
			var v any
			json.Unmarshal(b, &v)
			walk(op.Spec().Name+" "+side, "$", v)
		}
	}
}

// TestToolOutputsWriteRecordsOnce: an MCP tool's output schema is the
// operation's output schema with each record in it written once, under
// $defs, and referenced where it recurs: it resolves, it is no larger than
// the output schema, and a task's abort (its last_abort and each of its
// aborts) is written once in get_task's.
func TestToolOutputsWriteRecordsOnce(t *testing.T) {
	for _, op := range ops.All() {
		sp := op.Spec()
		if sp.Stream {
			continue
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(op.ToolOutputSchema(), &s); err != nil {
			t.Fatalf("%s: %v", sp.Name, err)
		}
		if _, err := s.Resolve(nil); err != nil {
			t.Errorf("%s: the tool's output schema does not resolve: %v", sp.Name, err)
		}
		if full, _ := json.Marshal(op.OutputSchema()); len(op.ToolOutputSchema()) > len(full)+200 {
			t.Errorf("%s: the tool's output schema is %d bytes, the output schema %d", sp.Name, len(op.ToolOutputSchema()), len(full))
		}
	}
	tool := string(ops.GetTask.ToolOutputSchema())
	if n := strings.Count(tool, `"abort_id":{`); n != 1 || !strings.Contains(tool, `"$ref":"#/$defs/Abort"`) {
		t.Errorf("get_task's tool output schema writes an abort %d times, want once under $defs: %.300s", n, tool)
	}
	full, _ := json.Marshal(ops.GetTask.OutputSchema())
	if n := strings.Count(string(full), `"abort_id":{`); n < 2 {
		t.Errorf("get_task's output schema writes an abort %d times: the test no longer tells", n)
	}
}
