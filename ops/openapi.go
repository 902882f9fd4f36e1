package ops

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/cks-dev/cks"
)

// OpenAPI returns the OpenAPI 3.1 document of the HTTP operations of ops
// (a hub passes those it offers), for hub version version: per operation its
// path and method, operationId (the operation's name), summary and
// description, path and query parameters and JSON body from its input
// schema, its success answer from its output schema, and the error answer.
// Extensions say what the table adds: x-cks-permission and x-cks-resource
// (what the caller must hold, on which node of the resource tree), x-cks-mcp
// (also an MCP tool of the same name) and x-cks-secret (the answer carries a
// secret only the caller sees).
func OpenAPI(ops []Operation, version string) ([]byte, error) {
	paths := map[string]map[string]any{}
	for _, op := range ops {
		sp := op.Spec()
		if sp.Surfaces&HTTP == 0 {
			continue
		}
		item, err := operationObject(op)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s: %w", sp.Name, err)
		}
		if paths[sp.Path] == nil {
			paths[sp.Path] = map[string]any{}
		}
		paths[sp.Path][strings.ToLower(sp.Method)] = item
	}
	errSchema, err := toMap(outputSchema[cks.ErrorBody]("error"))
	if err != nil {
		return nil, err
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "cks hub",
			"version":     version,
			"description": "The HTTP API of a cks hub: every operation of its operations table (package ops). Errors are {\"error\":{\"code\",\"message\",\"field\"?}}.",
		},
		"security": []any{map[string]any{"bearer": []any{}}},
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
			"schemas":         map[string]any{"Error": errSchema},
		},
		"paths": paths,
	}
	return json.MarshalIndent(doc, "", "  ")
}

func operationObject(op Operation) (map[string]any, error) {
	sp := op.Spec()
	o := map[string]any{
		"operationId":      sp.Name,
		"summary":          sp.Summary,
		"x-cks-permission": sp.Permission,
		"x-cks-resource":   sp.Resource,
		"responses": map[string]any{
			"default": map[string]any{"description": "an error", "content": jsonContent(map[string]any{"$ref": "#/components/schemas/Error"})},
		},
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
	responses := o["responses"].(map[string]any)
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
	var params []any
	path := Wildcards(sp.Path)
	for _, name := range path {
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": props[name]})
		delete(props, name)
	}
	if op.Route().Bodyless() {
		for _, name := range sortedKeys(props) {
			p := map[string]any{"name": name, "in": "query", "required": isRequired(name), "schema": props[name]}
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
		o["requestBody"] = map[string]any{"required": len(req) > 0, "content": jsonContent(in)}
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
	responses[status] = map[string]any{"description": sp.Summary, "content": jsonContent(out)}
	if a := sp.Alternate; a != nil {
		responses[strconv.Itoa(a.Status)] = map[string]any{"description": a.When, "content": jsonContent(out)}
	}
	return o, nil
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
