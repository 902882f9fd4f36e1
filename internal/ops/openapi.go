package ops

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cks-dev/cks"
)

// OpenAPI returns the OpenAPI 3.1 document of the HTTP operations of ops
// (a hub passes those it offers), for hub version version served at server
// (its base URL; "" for the same origin): per operation its path and
// method, operationId (the operation's name), tag (what it acts on),
// summary and description, path and query parameters and JSON body from
// its input schema, its success answer from its output schema, and its
// refusals (4XX, 5XX: the error body). A record that recurs (a Task, an
// Abort, a NewTask, any JSON value) is one named component under
// components/schemas, referenced where it occurs (components). Extensions
// say what the table adds: x-cks-permission and x-cks-resource (what the
// caller must hold, on which node of the resource tree), x-cks-mcp (also an
// MCP tool of the same name) and x-cks-secret (the answer carries a secret
// only the caller sees).
func OpenAPI(ops []Operation, version, server string) ([]byte, error) {
	c := newComponents()
	paths := map[string]map[string]any{}
	used := map[string]bool{}
	for _, op := range ops {
		sp := op.Spec()
		if sp.Surfaces&HTTP == 0 {
			continue
		}
		item, err := operationObject(op, c)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s: %w", sp.Name, err)
		}
		if paths[sp.Path] == nil {
			paths[sp.Path] = map[string]any{}
		}
		paths[sp.Path][strings.ToLower(sp.Method)] = item
		used[tagOf(sp)] = true
	}
	es := outputSchema[cks.ErrorBody]("error")
	// "field" of an error is the input's, not an edit's (outputDocs).
	es.Properties["error"].Properties["field"].Description = "the input field at fault, for an invalid_argument error"
	errSchema, err := toMap(es)
	if err != nil {
		return nil, err
	}
	c.schemas["Error"] = errSchema
	var tags []any
	for _, t := range apiTags {
		if used[t.name] {
			tags = append(tags, map[string]any{"name": t.name, "description": t.description})
		}
	}
	if server == "" {
		server = "/"
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "cks hub",
			"version":     version,
			"description": "The HTTP API of a cks hub: every operation of its operations table (package ops). Errors are {\"error\":{\"code\",\"message\",\"field\"?}}.",
			"contact":     map[string]any{"name": "cks", "url": "https://github.com/cks-dev/cks"},
		},
		"servers":  []any{map[string]any{"url": server, "description": "this hub"}},
		"security": []any{map[string]any{"bearer": []any{}}},
		"tags":     tags,
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
			"schemas":         c.schemas,
		},
		"paths": paths,
	}
	return json.MarshalIndent(doc, "", "  ")
}

// apiTags are the tags of the document, in its order: what an operation
// acts on (tagOf).
var apiTags = []struct{ name, description string }{
	{"tasks", "the task ledger: the operator's operations and the worker protocol"},
	{"processes", "the standalone agent processes: liveness and graceful stops"},
	{"sweepers", "the hub's background sweepers"},
	{"types", "task types held fleet-wide (pause and resume)"},
	{"limits", "concurrency limits on the keys tasks carry"},
	{"usage", "what agents reported spending: tokens and cost"},
	{"schedules", "schedules: tasks created at the slots of cron expressions"},
	{"objects", "the knowledge store and the research pipeline"},
	{"tokens", "bearer tokens and their grants"},
	{"sessions", "studio sign-ins"},
	{"stored", "the check of stored values against today's bounds"},
	{"hub", "the hub's streams: metrics, events and this contract"},
}

// tagOf is the tag of sp: the collection its path names under /v1, or hub
// for a stream.
func tagOf(sp *Spec) string {
	if sp.Stream {
		return "hub"
	}
	rest, _ := strings.CutPrefix(sp.Path, "/v1/")
	tag, _, _ := strings.Cut(rest, "/")
	return tag
}

// refusals are the error answers every operation may give besides its
// success: the 4XX of its input and its caller, the 5XX of the hub's
// storage. Each is the error body (components/schemas/Error).
var refusals = map[string]string{
	"4XX": "refused: 400 invalid_argument (the input; field names the field), 401 unauthenticated, 403 forbidden " +
		"(the permission the caller lacks), 404 not_found, 409 conflict or lease_lost, 413 request_too_large, 415 " +
		"unsupported_media_type, 429 throttled; nothing was changed",
	"5XX": "the hub failed: 503 when its database cannot take the call (storage_read_only, storage_full, storage_unavailable), 500 otherwise",
}

func operationObject(op Operation, c *components) (map[string]any, error) {
	sp := op.Spec()
	o := map[string]any{
		"operationId":      sp.Name,
		"summary":          sp.Summary,
		"tags":             []any{tagOf(sp)},
		"x-cks-permission": sp.Permission,
		"x-cks-resource":   sp.Resource,
		"responses":        map[string]any{},
	}
	responses := o["responses"].(map[string]any)
	for code, what := range refusals {
		responses[code] = map[string]any{"description": what, "content": jsonContent(map[string]any{"$ref": "#/components/schemas/Error"})}
	}
	if sp.Description != "" {
		o["description"] = sp.Description
	}
	if sp.Surfaces&MCP != 0 {
		o["x-cks-mcp"] = true
	}
	if sp.Secret {
		o["x-cks-secret"] = true
	}
	status := strconv.Itoa(successStatus(sp.Status))
	if sp.Stream {
		responses[status] = map[string]any{"description": sp.Summary}
		return o, nil
	}
	in, err := toMap(op.InputSchema())
	if err != nil {
		return nil, err
	}
	props, _ := in["properties"].(map[string]any)
	required, _ := in["required"].([]any)
	isRequired := func(name string) bool { return slices.Contains(required, any(name)) }
	fields := fieldsOf(op.InputType())
	typeOfProp := func(name string) reflect.Type {
		if f, ok := lookupField(fields, name); ok {
			return f.typ
		}
		return nil
	}
	var params []any
	path := Wildcards(sp.Path)
	for _, name := range path {
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": c.ref(props[name], typeOfProp(name))})
		delete(props, name)
	}
	for _, name := range sp.Headers {
		// The header that may give the body field of its name
		// (Spec.Headers); the body keeps the field too.
		params = append(params, map[string]any{"name": name, "in": "header", "required": false,
			"description": "the body's " + name + " field, given as a request header instead", "schema": map[string]any{"type": "string"}})
	}
	if op.Route().Bodyless() {
		for _, name := range sortedKeys(props) {
			p := map[string]any{"name": name, "in": "query", "required": isRequired(name), "schema": c.ref(props[name], typeOfProp(name))}
			if arr := queryList(props[name]); arr != nil {
				p["schema"] = arr
				p["style"], p["explode"] = "form", true // ?state=OPEN&state=STOPPED
			}
			params = append(params, p)
		}
	} else if len(props) > 0 {
		var req []any
		for _, r := range required {
			if !slices.Contains(path, fmt.Sprint(r)) {
				req = append(req, r)
			}
		}
		if len(req) > 0 {
			in["required"] = req
		} else {
			delete(in, "required")
		}
		o["requestBody"] = map[string]any{"required": len(req) > 0, "content": jsonContent(c.ref(in, op.InputType()))}
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	if successStatus(sp.Status) == http.StatusNoContent {
		responses[status] = map[string]any{"description": sp.Summary}
		return o, nil
	}
	out, err := toMap(op.OutputSchema())
	if err != nil {
		return nil, err
	}
	outRef := c.ref(out, op.OutputType())
	responses[status] = map[string]any{"description": sp.Summary, "content": jsonContent(outRef)}
	if a := sp.Alternate; a != nil {
		responses[strconv.Itoa(a.Status)] = map[string]any{"description": a.When, "content": jsonContent(outRef)}
	}
	return o, nil
}

// components are the named schemas of a document: a record (a struct type
// of package cks that its operations answer or take, nested in another
// one or not) is named once, by its type, and referenced wherever its
// schema recurs as named; any JSON value is the one JSONValue. A schema of
// a type that differs where it recurs (an operation's own adjustments, a
// process's statuses) stays where it is.
type components struct {
	schemas map[string]any
	// prefix is what a reference names a component under:
	// "#/components/schemas/" in an OpenAPI document, "#/$defs/" in a
	// schema that carries its own (an MCP tool's output).
	prefix string
	// jsonValue names any JSON value too (JSONValue); else it stays
	// anyJSON's six branches where it is.
	jsonValue bool
}

// jsonValue is the component of any JSON value (anyJSON), its array items
// and object members any JSON value in turn.
const jsonValue = "JSONValue"

// newComponents are the components of an OpenAPI document.
func newComponents() *components {
	self := map[string]any{"$ref": "#/components/schemas/" + jsonValue}
	var branches []any
	for _, t := range jsonTypes {
		b := map[string]any{"type": t}
		switch t {
		case "array":
			b["items"] = self
		case "object":
			b["additionalProperties"] = self
		}
		branches = append(branches, b)
	}
	return &components{schemas: map[string]any{jsonValue: map[string]any{"description": "any JSON value", "anyOf": branches}},
		prefix: "#/components/schemas/", jsonValue: true}
}

// withDefs is schema s of Go type t with each record it holds written once,
// under $defs, and referenced where it occurs: the form of an MCP tool's
// output schema, whose Task (with its attempts, aborts and events, each
// several times in it) is written once. A schema without a record is s.
func withDefs(s *jsonschema.Schema, t reflect.Type) (json.RawMessage, error) {
	m, err := toMap(s)
	if err != nil {
		return nil, err
	}
	c := &components{schemas: map[string]any{}, prefix: "#/$defs/"}
	top := c.ref(m, t)
	if ref, ok := top.(map[string]any); ok && ref["$ref"] != nil {
		// The output itself is a record: its schema stays at the top, its
		// own records under $defs.
		name := strings.TrimPrefix(ref["$ref"].(string), c.prefix)
		top = maps.Clone(c.schemas[name].(map[string]any))
		if d, ok := m["description"]; ok {
			top.(map[string]any)["description"] = d
		}
		delete(c.schemas, name)
		if strings.Contains(mustJSON(c.schemas), `"#/$defs/`+name+`"`) {
			c.schemas[name] = top // it recurs within itself: kept under $defs too
		}
	}
	if len(c.schemas) > 0 {
		top.(map[string]any)["$defs"] = c.schemas
	}
	return json.Marshal(top)
}

// mustJSON is v as JSON (of plain data, which always encodes).
func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ref returns schema (a node of a document's JSON, of Go type t, nil when
// unknown) with every recurring record in it replaced by its component's
// reference (a reference keeps the description it had).
func (c *components) ref(schema any, t reflect.Type) any {
	node, ok := schema.(map[string]any)
	if !ok {
		return schema
	}
	if isAnyJSON(node) {
		if c.jsonValue {
			return withDescription(map[string]any{"$ref": c.prefix + jsonValue}, node)
		}
		return node
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if branches, ok := node["anyOf"].([]any); ok {
		for i, b := range branches {
			branches[i] = c.ref(b, t)
		}
	}
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Map) {
		elem = t.Elem()
	}
	if items, ok := node["items"]; ok {
		node["items"] = c.ref(items, elem)
	}
	if ap, ok := node["additionalProperties"].(map[string]any); ok {
		node["additionalProperties"] = c.ref(ap, elem)
	}
	props, _ := node["properties"].(map[string]any)
	if t == nil || t.Kind() != reflect.Struct {
		return node
	}
	fields := jsonFields(t)
	for name, p := range props {
		props[name] = c.ref(p, fields[name])
	}
	name := t.Name()
	if t.PkgPath() != reflect.TypeFor[cks.Task]().PkgPath() || name == "" || node["type"] != "object" {
		return node
	}
	bare := maps.Clone(node)
	delete(bare, "description")
	if have, ok := c.schemas[name]; ok && !reflect.DeepEqual(have, bare) {
		return node // this one differs: it stays here
	} else if !ok {
		c.schemas[name] = bare
	}
	return withDescription(map[string]any{"$ref": c.prefix + name}, node)
}

// withDescription is ref with the description of node, if it has one.
func withDescription(ref, node map[string]any) map[string]any {
	if d, ok := node["description"]; ok {
		ref["description"] = d
	}
	return ref
}

// isAnyJSON reports whether node is anyJSON's: the anyOf of JSON's six
// types, each bare.
func isAnyJSON(node map[string]any) bool {
	branches, ok := node["anyOf"].([]any)
	if !ok || len(branches) != len(jsonTypes) {
		return false
	}
	for i, b := range branches {
		m, ok := b.(map[string]any)
		if !ok || len(m) != 1 || m["type"] != jsonTypes[i] {
			return false
		}
	}
	return true
}

// isArray reports whether a schema's type is (or admits) an array.
func isArray(schema any) bool {
	s, _ := schema.(map[string]any)
	switch t := s["type"].(type) {
	case string:
		return t == "array"
	case []any:
		return slices.Contains(t, any("array"))
	}
	return false
}

// queryList is the schema of a list as a query parameter, which repeats:
// the schema itself when it is an array, the list of a cks.Names (a name or
// a list of them, in a body) with its description, else nil.
func queryList(schema any) map[string]any {
	s, _ := schema.(map[string]any)
	if isArray(s) {
		return s
	}
	branches, _ := s["anyOf"].([]any)
	for _, b := range branches {
		if isArray(b) {
			arr := maps.Clone(b.(map[string]any))
			if d, ok := s["description"]; ok {
				arr["description"] = d
			}
			return arr
		}
	}
	return nil
}

func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

// toMap copies a schema as plain JSON data.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
