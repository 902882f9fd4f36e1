package ops

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cks-dev/cks"
)

// The JSON schemas of inputs and outputs are inferred from the Go types
// (github.com/google/jsonschema-go): a field's `jsonschema` tag is its
// description, a field without omitempty is required. A json.RawMessage
// (payload, metadata, content) is any JSON value; properties named
// metadata and content are JSON objects.

// schemaOptions maps the types the inference cannot read, and cks.NewTask
// (a task to create: create_task's input, update_task's add_children) and
// cks.ScheduleTask (a schedule's template), whose fields carry no
// descriptions and of which only type is required.
func schemaOptions() *jsonschema.ForOptions {
	types := map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): anyJSON("any JSON value"),
		// An interface (a sweeper's details): any JSON value too, rather
		// than the bare schema true, which strict validators refuse.
		reflect.TypeFor[any](): anyJSON("any JSON value"),
		// One name, or a list of them (cks.Names).
		reflect.TypeFor[cks.Names](): {AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "array", Items: &jsonschema.Schema{Type: "string"}}}},
	}
	taskSchema[cks.NewTask](types, "new task", newTaskDocs)
	taskSchema[cks.ScheduleTask](types, "schedule task", scheduleTaskDocs)
	return &jsonschema.ForOptions{TypeSchemas: types}
}

// taskSchema adds to types the schema of T, a task to create (what, in
// errors), its properties described by docs, its type required.
func taskSchema[T any](types map[reflect.Type]*jsonschema.Schema, what string, docs map[string]string) {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: types})
	if err != nil {
		panic(fmt.Sprintf("ops: %s schema: %v", what, err))
	}
	openRaw(s)
	describe(what, s, docs)
	s.Required = []string{"type"}
	types[reflect.TypeFor[T]()] = s
}

// openRaw gives the raw JSON properties their documented shape.
func openRaw(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		switch name {
		case "payload":
			if p.Type == "" && len(p.Types) == 0 {
				p.Description = "the task's payload, any JSON value"
			}
		case "metadata":
			if p.Type == "" && len(p.Types) == 0 {
				s.Properties[name] = &jsonschema.Schema{Type: "object", Description: "metadata, a JSON object"}
			}
		case "content":
			if p.Type == "" && len(p.Types) == 0 {
				s.Properties[name] = &jsonschema.Schema{Type: "object", Description: "the object's content, a JSON object"}
			}
		}
		openRaw(p)
	}
	openRaw(s.Items)
}

// bound states in s, the schema of an input of struct type t, what every
// field's declaration holds it to (rules.go; over, the operation's own,
// first): a number's minimum, maximum and default, a text's maxLength (its
// rule's, else cks.MaxTextLen of its name), minLength and pattern, the
// enum of a closed set, a list's maxItems and its items' bounds, and the
// bounds of every stored JSON value in the description of payload,
// metadata and content. A cks.Names is bounded on both its branches.
func bound(s *jsonschema.Schema, t reflect.Type, over fields) {
	for t.Kind() == reflect.Pointer || listOf(t) {
		t = t.Elem()
	}
	if s == nil || t.Kind() != reflect.Struct {
		return
	}
	for _, f := range fieldsOf(t) {
		p, ok := s.Properties[f.name]
		if !ok {
			continue
		}
		r := f.rule
		if o, ok := over[f.name]; ok {
			r = o
		}
		boundField(p, f, r)
	}
}

// boundField states rule r of field f in its schema p.
func boundField(p *jsonschema.Schema, f field, r rule) {
	if f.name == "payload" || f.name == "metadata" || f.name == "content" {
		if !strings.Contains(p.Description, jsonBounds) {
			p.Description += jsonBounds
		}
		return
	}
	if r.def != nil {
		p.Default, _ = json.Marshal(r.def)
	}
	if t := f.typ; t == reflect.TypeFor[time.Time]() || t == reflect.TypeFor[*time.Time]() {
		// A time (RFC 3339) is bounded by its format; the scan refuses
		// any other text (scanner.time).
		p.Format = "date-time"
		return
	}
	for _, b := range append([]*jsonschema.Schema{p}, p.AnyOf...) {
		switch {
		case b.Type == "string" || slices.Contains(b.Types, "string"):
			boundText(b, f.name, r)
		case b.Type == "array" || slices.Contains(b.Types, "array"):
			b.MaxItems = new(r.items)
			if b.Items == nil {
				continue
			}
			switch b.Items.Type {
			case "string":
				boundText(b.Items, f.name, r)
			case "integer", "number":
				boundNumber(b.Items, r)
			case "object":
				bound(b.Items, f.typ, nil)
			}
		case b.Type == "integer" || b.Type == "number" || slices.Contains(b.Types, "integer") || slices.Contains(b.Types, "number"):
			boundNumber(b, r)
		case b.Type == "object" || slices.Contains(b.Types, "object"):
			bound(b, f.typ, nil)
		}
	}
}

// boundNumber states r's range in the schema of a number.
func boundNumber(s *jsonschema.Schema, r rule) {
	s.Minimum, s.Maximum = r.min, r.max
}

// boundText states r in the schema of a text field named name.
func boundText(s *jsonschema.Schema, name string, r rule) {
	s.MaxLength = new(r.maxLenOf(name))
	switch {
	case r.segment:
		s.MinLength, s.Pattern = new(1), "^[^/]+$"
	case r.nonBlank:
		s.MinLength, s.Pattern = new(1), `\S`
	case r.nonEmpty:
		s.MinLength = new(1)
	}
	if r.pattern != "" {
		s.Pattern = r.pattern
	}
	if len(r.enum) > 0 {
		s.Enum = nil
		for _, v := range r.enum {
			s.Enum = append(s.Enum, v)
		}
	}
}

// jsonBounds is what bound adds to the description of a JSON value.
var jsonBounds = fmt.Sprintf(" (nested at most %d levels deep, at most %d bytes as stored: numbers in plain decimal form)",
	cks.MaxJSONDepth, cks.MaxJSONBytes)

// inputSchema is the schema of In: an object whose properties are described
// by their tags and by docs (property path, dotted for nested ones → text),
// requiring required when it is set.
func inputSchema[In any](name string, docs map[string]string, required []string, over fields) *jsonschema.Schema {
	s, err := jsonschema.For[In](schemaOptions())
	if err != nil {
		panic(fmt.Sprintf("ops: %s: input schema: %v", name, err))
	}
	openRaw(s)
	bound(s, reflect.TypeFor[In](), over)
	portable(s)
	if s.Type != "object" {
		panic(fmt.Sprintf("ops: %s: input %v is not a JSON object", name, reflect.TypeFor[In]()))
	}
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	for _, path := range slices.Sorted(maps.Keys(docs)) {
		p := s
		for seg := range strings.SplitSeq(path, ".") {
			if p.Items != nil {
				p = p.Items
			}
			next, ok := p.Properties[seg]
			if !ok {
				panic(fmt.Sprintf("ops: %s: documented input property %q does not exist", name, path))
			}
			p = next
		}
		p.Description = docs[path]
	}
	if required != nil {
		for _, r := range required {
			if _, ok := s.Properties[r]; !ok {
				panic(fmt.Sprintf("ops: %s: required input property %q does not exist", name, r))
			}
		}
		s.Required = required
	}
	return s
}

// outputSchema is the schema of Out.
func outputSchema[Out any](name string) *jsonschema.Schema {
	s, err := jsonschema.For[Out](schemaOptions())
	if err != nil {
		panic(fmt.Sprintf("ops: %s: output schema: %v", name, err))
	}
	openRaw(s)
	portable(s)
	documentOutput(s, reflect.TypeFor[Out]())
	return s
}

// jsonTypes are JSON's six types, the branches of anyJSON.
var jsonTypes = []string{"object", "array", "string", "number", "boolean", "null"}

// anyJSON is the schema of any JSON value, spelled as the six types'
// anyOf: a schema with no validation keyword (the object form of a bare
// true) is one strict validators (the MCP Inspector's --strict) warn about.
func anyJSON(description string) *jsonschema.Schema {
	s := &jsonschema.Schema{Description: description}
	for _, t := range jsonTypes {
		s.AnyOf = append(s.AnyOf, &jsonschema.Schema{Type: t})
	}
	return s
}

// portable rewrites, everywhere in s, what the inference writes that not
// every client's schema dialect reads: a type array (["null", T], a
// pointer, slice or map that may be null) becomes an anyOf of single-type
// branches — {"anyOf": [{"type": "null"}, {"type": T, …}]}, the
// constraints in T's branch and the description outside — and a schema
// with no validation keyword (a raw value whose description alone was
// set) becomes anyJSON. The JSON values either accepts are the same.
func portable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) > 0 {
		outer := jsonschema.Schema{Description: s.Description, Title: s.Title}
		inner := *s
		inner.Types, inner.Description, inner.Title = nil, "", ""
		for _, t := range s.Types {
			if t == "null" {
				outer.AnyOf = append(outer.AnyOf, &jsonschema.Schema{Type: "null"})
				continue
			}
			b := inner
			b.Type = t
			outer.AnyOf = append(outer.AnyOf, &b)
		}
		*s = outer
	}
	if unconstrained(s) {
		*s = *anyJSON(s.Description)
	}
	for _, p := range s.Properties {
		portable(p)
	}
	for _, d := range s.Defs {
		portable(d)
	}
	for _, b := range slices.Concat(s.AnyOf, s.OneOf, s.AllOf, s.PrefixItems) {
		portable(b)
	}
	portable(s.Items)
	portable(s.AdditionalProperties)
}

// unconstrained reports whether s has no keyword that constrains a value
// (only annotations such as description).
func unconstrained(s *jsonschema.Schema) bool {
	return s.Type == "" && len(s.Types) == 0 && s.Ref == "" && s.Enum == nil && s.Const == nil &&
		s.AnyOf == nil && s.OneOf == nil && s.AllOf == nil && s.Not == nil && s.If == nil &&
		s.Properties == nil && s.Items == nil && s.AdditionalProperties == nil
}

// describe sets the description of s's properties from docs; a name that
// is no property panics (the docs went stale).
func describe(op string, s *jsonschema.Schema, docs map[string]string) {
	for name, doc := range docs {
		p, ok := s.Properties[name]
		if !ok {
			panic(fmt.Sprintf("ops: %s: output has no property %q", op, name))
		}
		p.Description = doc
	}
}

// documentOutput gives every property of the output schema s of Go type t
// that has no description the one outputDocs holds for it: under
// "Type.field" (t's struct type name and the JSON name), else under the
// JSON name alone. It walks t alongside s (pointers, slices, maps and
// anyOf branches).
func documentOutput(s *jsonschema.Schema, t reflect.Type) {
	if s == nil || t == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for _, b := range s.AnyOf {
		documentOutput(b, t)
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		documentOutput(s.Items, t.Elem())
		return
	case reflect.Map:
		documentOutput(s.AdditionalProperties, t.Elem())
		return
	case reflect.Struct:
	default:
		return
	}
	fields := jsonFields(t)
	for name, p := range s.Properties {
		if p.Description == "" {
			p.Description = outputDoc(t.Name(), name)
		}
		documentOutput(p, fields[name])
	}
}

// outputDoc is the description outputDocs holds for the field name of
// struct type typ ("" when none does).
func outputDoc(typ, name string) string {
	if d, ok := outputDocs[typ+"."+name]; ok {
		return d
	}
	return outputDocs[name]
}

// jsonFields maps the JSON names of t's fields (promoted ones included) to
// their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (f.Anonymous && name == "") {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, seen := out[name]; !seen || len(f.Index) == 1 {
			out[name] = f.Type
		}
	}
	return out
}
