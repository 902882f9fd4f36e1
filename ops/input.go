package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/cks-dev/cks"
)

// An input reaches an operation the same way from every surface: as one JSON
// object (the MCP arguments; over HTTP the body, with the path values and,
// for GET and DELETE, the query filled into the fields they name), decoded
// by Decode and checked by the operation's call. Only the transport's own
// syntax differs: a path value or query parameter that is not an integer
// where the field is one, a body that is not JSON.

// MaxBody bounds every JSON input (1 MiB).
const MaxBody = 1 << 20

// Decode reads the JSON object data into in (a pointer from NewInput),
// refusing unknown fields and trailing data with an error naming what was
// wrong. Empty data (or only white space, or null) stands for {}: an input
// whose every field is optional may be sent as nothing.
func Decode(data []byte, in any) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil
	}
	if len(data) > MaxBody {
		return fmt.Errorf("input of %d bytes is too large: limit %d: %w", len(data), MaxBody, cks.ErrInvalid)
	}
	if trimmed[0] != '{' {
		return fmt.Errorf("invalid input: expected a JSON object, got %s: %w", JSONKind(trimmed), cks.ErrInvalid)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(in); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return &cks.FieldError{Field: jsonField(te.Field), Expected: "a JSON " + te.Type.String()}
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return unknownField(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`))
		}
		return fmt.Errorf("input is not valid JSON (%v): %w", err, cks.ErrInvalid)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("input has data after the JSON object: %w", cks.ErrInvalid)
	}
	return nil
}

func unknownField(name string) error {
	return &cks.FieldError{Field: name, Expected: "no such field (it is not part of this request)"}
}

// jsonField turns the path of a type error into the JSON field name: an
// embedded struct (update_task's TaskPatch) shows in it under its Go name,
// which is no field of the input, so capitalised segments are dropped
// (every JSON field of cks is lower case).
func jsonField(path string) string {
	var out []string
	for _, seg := range strings.Split(path, ".") {
		if seg != "" && (seg[0] < 'A' || seg[0] > 'Z') {
			out = append(out, seg)
		}
	}
	return strings.Join(out, ".")
}

// JSONKind names what a JSON text that is not an object starts with
// ("null", "an array", "a string", …), for the messages that refuse it.
func JSONKind(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("null")):
		return "null"
	case b[0] == '[':
		return "an array"
	case b[0] == '"':
		return "a string"
	case b[0] == 't' || b[0] == 'f':
		return "a boolean"
	case b[0] == '-' || b[0] >= '0' && b[0] <= '9':
		return "a number"
	}
	return "something that is not JSON"
}

// HTTPInput builds the input of op from an HTTP request: the path values
// (pathValue of each wildcard), and the query (GET, DELETE) or the JSON body.
// A body naming a path field is refused: the path says it.
func HTTPInput(op Operation, pathValue func(string) string, query url.Values, body []byte) (any, error) {
	sp := op.Spec()
	in := op.NewInput()
	path := Wildcards(sp.Path)
	if op.Route().Bodyless() {
		if err := fillQuery(in, query, path); err != nil {
			return nil, err
		}
	} else {
		if keys, err := topKeys(body); err == nil {
			for _, k := range keys {
				if slices.Contains(path, k) {
					return nil, unknownField(k)
				}
			}
		}
		if err := Decode(body, in); err != nil {
			return nil, err
		}
	}
	for _, name := range path {
		if err := setText(in, name, pathValue(name), true); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// topKeys returns the keys of a JSON object (nil for anything else).
func topKeys(data []byte) ([]string, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

// fillQuery sets the fields of in named by query parameters: a list field
// takes every value, each split on commas (?state=OPEN,RUNNING&state=STOPPED),
// any other the first. A parameter that names no field (or a path field) is
// refused as a body's unknown field is: the same input on every surface.
func fillQuery(in any, q url.Values, path []string) error {
	fields := cks.InputFields(reflect.TypeOf(in).Elem())
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if _, ok := fields[name]; !ok || slices.Contains(path, name) {
			return unknownField(name)
		}
		f := cks.InputField(in, name)
		if f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String {
			f.Set(reflect.ValueOf(splitAll(q[name])))
			continue
		}
		if v := q.Get(name); v != "" {
			if err := setText(in, name, v, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// splitAll splits every value on commas, dropping blank items.
func splitAll(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// setText sets field name of in from text (a path value when path, else a
// query value; a pointer field gets a value of its own): strings as they
// are, integers parsed (a FieldError naming the field otherwise; an integer
// in a path is an id), booleans as strconv.ParseBool reads them.
func setText(in any, name, text string, path bool) error {
	f := cks.InputField(in, name)
	if f.Kind() == reflect.Pointer { // an optional value: set, pointing to the text's
		f.Set(reflect.New(f.Type().Elem()))
		f = f.Elem()
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(text)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			expected := "an integer"
			if path {
				expected = "a positive integer"
			}
			return &cks.FieldError{Field: name, Expected: fmt.Sprintf("%s, got %q", expected, text)}
		}
		f.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return &cks.FieldError{Field: name, Expected: fmt.Sprintf("true or false, got %q", text)}
		}
		f.SetBool(b)
	default:
		panic(fmt.Sprintf("ops: field %s of %T cannot be set from text", name, in))
	}
	return nil
}

// HTTPRequest is the inverse of HTTPInput: cks.Request of an operation
// offered over HTTP.
func HTTPRequest(op Operation, in any) (method, path string, body []byte, err error) {
	if op.Spec().Surfaces&HTTP == 0 {
		return "", "", nil, fmt.Errorf("operation %s is not offered over HTTP", op.Spec().Name)
	}
	return cks.Request(op, in)
}

// Wildcards is cks.Wildcards.
func Wildcards(pattern string) []string { return cks.Wildcards(pattern) }

// expand fills the {field} wildcards of a resource template with the
// fields of in. An id that is not positive, and a name that is empty or
// holds a "/" (it would name another node of the resource tree), are
// refused as bad input naming the field.
func expand(template string, in any) (string, error) {
	res := template
	for _, name := range Wildcards(template) {
		f := cks.InputField(in, name)
		var v string
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			if f.Int() <= 0 {
				return "", &cks.FieldError{Field: name, Expected: fmt.Sprintf("a positive integer, got %d", f.Int())}
			}
			v = strconv.FormatInt(f.Int(), 10)
		default:
			v = f.String()
			if v == "" || strings.Contains(v, "/") {
				return "", &cks.FieldError{Field: name, Expected: fmt.Sprintf("a single path segment, got %q", v)}
			}
		}
		res = strings.ReplaceAll(res, "{"+name+"}", v)
	}
	return res, nil
}

// checkText refuses an input whose top-level string fields hold text no
// store backend stores (cks.ValidateText), naming the field: so a value
// that never reaches a store validator (a process kind, a sweeper id) is
// refused alike on every surface, before anything is read.
func checkText(in any) error {
	v := reflect.ValueOf(in).Elem()
	if v.Kind() != reflect.Struct {
		return nil
	}
	for _, f := range reflect.VisibleFields(v.Type()) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		fv := v.FieldByIndex(f.Index)
		switch {
		case fv.Kind() == reflect.String:
			if err := cks.ValidateText(name, fv.String()); err != nil {
				return err
			}
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
			if err := cks.ValidateTexts(name, fv.Convert(reflect.TypeFor[[]string]()).Interface().([]string)); err != nil {
				return err
			}
		}
	}
	return nil
}
