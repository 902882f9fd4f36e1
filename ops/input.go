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

	"github.com/cks-dev/cks/store"
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
		return fmt.Errorf("input of %d bytes is too large: limit %d: %w", len(data), MaxBody, store.ErrInvalid)
	}
	if trimmed[0] != '{' {
		return fmt.Errorf("invalid input: expected a JSON object, got %s: %w", JSONKind(trimmed), store.ErrInvalid)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(in); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return &store.FieldError{Field: jsonField(te.Field), Expected: "a JSON " + te.Type.String()}
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return unknownField(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`))
		}
		return fmt.Errorf("input is not valid JSON (%v): %w", err, store.ErrInvalid)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("input has data after the JSON object: %w", store.ErrInvalid)
	}
	return nil
}

func unknownField(name string) error {
	return &store.FieldError{Field: name, Expected: "no such field (it is not part of this request)"}
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
	if bodyless(sp.Method) {
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

// bodyless reports whether a method's input travels in the URL only.
func bodyless(method string) bool { return method == "GET" || method == "DELETE" }

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
	fields := jsonFields(reflect.TypeOf(in).Elem())
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if _, ok := fields[name]; !ok || slices.Contains(path, name) {
			return unknownField(name)
		}
		f := field(in, name)
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
// query value): strings as they are, integers parsed (a FieldError naming
// the field otherwise; an integer in a path is an id), booleans as
// strconv.ParseBool reads them.
func setText(in any, name, text string, path bool) error {
	f := field(in, name)
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
			return &store.FieldError{Field: name, Expected: fmt.Sprintf("%s, got %q", expected, text)}
		}
		f.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return &store.FieldError{Field: name, Expected: fmt.Sprintf("true or false, got %q", text)}
		}
		f.SetBool(b)
	default:
		panic(fmt.Sprintf("ops: field %s of %T cannot be set from text", name, in))
	}
	return nil
}

// HTTPRequest is the inverse of HTTPInput: the method, the path (with the
// path fields of in filled in and, for GET and DELETE, the other fields as
// the query) and the JSON body (nil when there is nothing to send) of a call
// of op with input in: a pointer to op's input type, or any value that
// encodes as the same JSON object (a json.RawMessage). A client calls any
// operation with it. Path and query values of a typed input are sent as
// they are, bytes and all, so the hub judges them (JSON would have replaced
// invalid UTF-8).
func HTTPRequest(op Operation, in any) (method, path string, body []byte, err error) {
	sp := op.Spec()
	if sp.Surfaces&HTTP == 0 {
		return "", "", nil, fmt.Errorf("operation %s is not offered over HTTP", sp.Name)
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return "", "", nil, fmt.Errorf("encode the input of %s: %w", sp.Name, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return "", "", nil, fmt.Errorf("the input of %s is not a JSON object", sp.Name)
	}
	typed := reflect.TypeOf(in) == reflect.TypeOf(op.NewInput())
	texts := func(name string) []string {
		if typed {
			return fieldTexts(field(in, name))
		}
		return jsonTexts(m[name])
	}
	path = sp.Path
	for _, name := range Wildcards(sp.Path) {
		v := texts(name)
		if _, ok := m[name]; !ok || len(v) != 1 {
			return "", "", nil, &store.FieldError{Field: name, Expected: "a string or number for the path of " + sp.Name}
		}
		path = strings.Replace(path, "{"+name+"}", url.PathEscape(v[0]), 1)
		delete(m, name)
	}
	if bodyless(sp.Method) {
		q := url.Values{}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			for _, v := range texts(k) {
				q.Add(k, v)
			}
		}
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		return sp.Method, path, nil, nil
	}
	if len(m) > 0 {
		if body, err = json.Marshal(m); err != nil {
			return "", "", nil, err
		}
	}
	return sp.Method, path, body, nil
}

// fieldTexts is a field's value as path or query text (none when unset).
func fieldTexts(f reflect.Value) []string {
	switch f.Kind() {
	case reflect.String:
		return []string{f.String()}
	case reflect.Int, reflect.Int64:
		return []string{strconv.FormatInt(f.Int(), 10)}
	case reflect.Bool:
		return []string{strconv.FormatBool(f.Bool())}
	case reflect.Slice:
		if f.Type().Elem().Kind() == reflect.String {
			return f.Convert(reflect.TypeFor[[]string]()).Interface().([]string)
		}
	}
	return nil
}

// jsonTexts is a JSON value as path or query text: a scalar's text, or an
// array's items'.
func jsonTexts(v json.RawMessage) []string {
	var list []json.RawMessage
	if json.Unmarshal(v, &list) == nil {
		var out []string
		for _, item := range list {
			if t, err := scalarText(item); err == nil {
				out = append(out, t)
			}
		}
		return out
	}
	if t, err := scalarText(v); err == nil {
		return []string{t}
	}
	return nil
}

// scalarText is a JSON string's content, or a number's or boolean's text.
func scalarText(v json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, nil
	}
	t := strings.TrimSpace(string(v))
	if t == "" || t[0] == '{' || t[0] == '[' || t == "null" {
		return "", errors.New("not a scalar")
	}
	return t, nil
}

// Wildcards returns the names of the {wildcards} of a ServeMux pattern, a
// path or a resource template ("{path...}" names path).
func Wildcards(pattern string) []string {
	var out []string
	for rest := pattern; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, strings.TrimSuffix(rest[i+1:i+j], "..."))
		rest = rest[i+j+1:]
	}
}

// expand fills the {field} wildcards of a resource template with the
// fields of in. An id that is not positive, and a name that is empty or
// holds a "/" (it would name another node of the resource tree), are
// refused as bad input naming the field.
func expand(template string, in any) (string, error) {
	res := template
	for _, name := range Wildcards(template) {
		f := field(in, name)
		var v string
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			if f.Int() <= 0 {
				return "", &store.FieldError{Field: name, Expected: fmt.Sprintf("a positive integer, got %d", f.Int())}
			}
			v = strconv.FormatInt(f.Int(), 10)
		default:
			v = f.String()
			if v == "" || strings.Contains(v, "/") {
				return "", &store.FieldError{Field: name, Expected: fmt.Sprintf("a single path segment, got %q", v)}
			}
		}
		res = strings.ReplaceAll(res, "{"+name+"}", v)
	}
	return res, nil
}

// jsonFields maps the JSON names of a struct type's fields (embedded
// structs' promoted ones included) to their indexes.
func jsonFields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Index
	}
	return out
}

// field returns the field of *in with JSON name name.
func field(in any, name string) reflect.Value {
	v := reflect.ValueOf(in).Elem()
	idx, ok := jsonFields(v.Type())[name]
	if !ok {
		panic(fmt.Sprintf("ops: %T has no field %q", in, name))
	}
	return v.FieldByIndex(idx)
}

// checkText refuses an input whose top-level string fields hold text no
// store backend stores (store.ValidateText), naming the field: so a value
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
			if err := store.ValidateText(name, fv.String()); err != nil {
				return err
			}
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
			if err := store.ValidateTexts(name, fv.Convert(reflect.TypeFor[[]string]()).Interface().([]string)); err != nil {
				return err
			}
		}
	}
	return nil
}
