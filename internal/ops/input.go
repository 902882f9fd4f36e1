package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
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
// refusing a list past its bound before anything is decoded (scanInput),
// unknown fields and trailing data, with an error naming what was wrong.
// Empty data (or only white space, or null) stands for {}: an input whose
// every field is optional may be sent as nothing.
func Decode(data []byte, in any) error {
	return decodeJSON(data, in, scanInput(reflect.TypeOf(in).Elem(), data))
}

// decodeJSON is Decode of data, whose scan is sc.
func decodeJSON(data []byte, in any, sc *scan) error {
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
	if sc.err != nil {
		return sc.err
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
	in, _, err := decode(op, Request{Args: body, PathValue: pathValue, Query: query}, nil)
	return in, err
}

// decode builds op's input from req, once: over HTTP from the path values
// and the query or the body, else from Args, the whole input; sc is the
// scan of the JSON text, when the permission check read one already. It
// returns the input and which of its fields were sent.
func decode(op Operation, req Request, sc *scan) (any, presence, error) {
	in := op.NewInput()
	given := map[string]bool{}
	var path []string
	if req.PathValue != nil {
		path = Wildcards(op.Spec().Path)
	}
	if req.PathValue != nil && op.Route().Bodyless() {
		if err := fillQuery(in, req.Query, path, given); err != nil {
			return nil, nil, err
		}
	} else {
		if sc == nil {
			sc = scanInput(inputType(op), req.Args)
		}
		for _, k := range sc.keys {
			if slices.Contains(path, k) {
				return nil, nil, unknownField(k)
			}
		}
		if req.PathValue != nil && string(bytes.TrimSpace(req.Args)) == "null" {
			// null stands for {} in MCP arguments; an HTTP body is an object.
			return nil, nil, fmt.Errorf("invalid input: expected a JSON object, got null: %w", cks.ErrInvalid)
		}
		if err := decodeJSON(req.Args, in, sc); err != nil {
			return nil, nil, err
		}
		given = sc.sent
	}
	for _, name := range path {
		if err := setText(in, name, req.PathValue(name), true); err != nil {
			return nil, nil, err
		}
		given[name] = true
	}
	if err := fillHeaders(op, req, in, given); err != nil {
		return nil, nil, err
	}
	return in, func(p string) bool { return given[p] }, nil
}

// inputType is the struct type of op's input.
func inputType(op Operation) reflect.Type { return reflect.TypeOf(op.NewInput()).Elem() }

// fillQuery sets the fields of in named by query parameters: a list field
// takes every value, each split on commas (?state=OPEN,RUNNING&state=STOPPED),
// any other the first, and given notes each field set. A parameter that
// names no field (or a path field) is refused as a body's unknown field is:
// the same input on every surface; one whose name is no text a store takes
// is refused naming the query. A list of more items than its bound is
// refused before it is split.
func fillQuery(in any, q url.Values, path []string, given map[string]bool) error {
	fs := fieldsOf(reflect.TypeOf(in).Elem())
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if err := cks.ValidateText("query", name); err != nil {
			return &cks.FieldError{Field: "query", Expected: fmt.Sprintf("parameter names that are %s, got %q", cks.ExpectedText, name)}
		}
		f, ok := lookupField(fs, name)
		if !ok || slices.Contains(path, name) {
			return unknownField(name)
		}
		fv := cks.InputField(in, name)
		if listOf(fv.Type()) && fv.Type().Elem().Kind() == reflect.String {
			if n := countItems(q[name]); n > f.rule.items {
				return tooMany(name, f.rule, n)
			}
			fv.Set(reflect.ValueOf(splitAll(q[name])).Convert(fv.Type()))
			continue
		}
		if v := q.Get(name); v != "" {
			if err := setText(in, name, v, false); err != nil {
				return err
			}
			given[name] = true
		}
	}
	return nil
}

// countItems is len(splitAll(vals)), counted without splitting.
func countItems(vals []string) int {
	n := 0
	for _, v := range vals {
		for part := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(part) != "" {
				n++
			}
		}
	}
	return n
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
	case reflect.Float64:
		x, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return &cks.FieldError{Field: name, Expected: fmt.Sprintf("a number, got %q", text)}
		}
		f.SetFloat(x)
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

// fillHeaders sets the text fields of in that op takes from request
// headers (Spec.Headers) and req has, when the body left them empty; a
// body that gave one another value is refused naming the field.
func fillHeaders(op Operation, req Request, in any, given map[string]bool) error {
	if req.Header == nil {
		return nil
	}
	for _, name := range op.Spec().Headers {
		v := req.Header(name)
		if v == "" {
			continue
		}
		if body := cks.InputField(in, name).String(); body != "" {
			if body != v {
				return &cks.FieldError{Field: name, Expected: "the same value in the body as in the " + name + " header, or only one of them"}
			}
			continue
		}
		if err := cks.ValidateText(name, v); err != nil {
			return err
		}
		if err := setText(in, name, v, false); err != nil {
			return err
		}
		given[name] = true
	}
	return nil
}
