package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/cks-dev/cks"
)

// An input is judged in one pass, in one place (Call's admit): scan counts
// every list of the JSON against the declarations (rules.go) before
// anything of it is decoded, Decode decodes it once, and validate holds the
// decoded input to every declaration and to the operation's own rule
// (which may be a service's exported check, so the rule stays that
// service's one function). Every invalid_argument answer a call gives for
// its input comes from these, before it reaches a service
// (TestEveryRefusalIsAdmits); a service refuses with its own checks only
// what depends on its state (a dependency that does not exist, a cycle) or
// a caller in the hub's process that does not come through here (a
// sweeper, an agent, the worker).

// presence reports whether the input field at path (add_children[2].priority)
// was sent. A field that was not stands for its default and is not held
// to its range; a typed input (nil presence) sent every field that is not
// zero.
type presence func(path string) bool

// scan is what one streaming read of an input's JSON text tells before it
// is decoded: its first list longer than its declaration allows, the keys
// it names, which bounded numbers it sends, and a lenient draft of its top
// level for the permission check (Call's gate). A scan holds no more than
// the input's scalars: a list is counted, never kept.
type scan struct {
	// err is the first list past its bound or time that is none (a
	// FieldError naming it).
	err error
	// keys are the top-level keys that name a field, in order (an
	// unknown one Decode refuses).
	keys []string
	// sent are the paths of the numbers with a range that were sent.
	sent map[string]bool
	// draft is the input's top-level scalars, each read leniently (one of
	// the wrong type stays zero); draftOK is false when the text is not
	// JSON at all.
	draft   any
	draftOK bool
}

// scanInput reads data, the JSON text of an input of struct type t, once,
// as a token stream.
func scanInput(t reflect.Type, data []byte) *scan {
	sc := &scan{draft: reflect.New(t).Interface(), draftOK: true, sent: map[string]bool{}}
	if len(bytes.TrimSpace(data)) == 0 || len(data) > MaxBody {
		return sc
	}
	d := &scanner{scan: sc, dec: jsontext.NewDecoder(bytes.NewBuffer(data), // parsed in place, not copied
		jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))}
	if err := d.top(reflect.TypeOf(sc.draft).Elem()); err != nil {
		sc.draftOK = false // not JSON: Decode says why
	}
	return sc
}

// scanner walks the tokens of an input alongside its Go type.
type scanner struct {
	*scan
	dec *jsontext.Decoder
}

// top reads the input's value: an object of t's fields, or anything else
// (which Decode refuses).
func (d *scanner) top(t reflect.Type) error {
	if d.dec.PeekKind() != '{' {
		return d.dec.SkipValue()
	}
	if err := d.object(t, "", reflect.ValueOf(d.draft).Elem()); err != nil {
		return err
	}
	_, err := d.dec.ReadToken()
	if errors.Is(err, io.EOF) {
		return nil
	}
	return errors.New("data after the JSON object") // Decode says so
}

// object reads an object of struct type t at path; draft, when valid, is
// the value its scalars are drafted into (the top level only).
func (d *scanner) object(t reflect.Type, path string, draft reflect.Value) error {
	if _, err := d.dec.ReadToken(); err != nil { // {
		return err
	}
	fs := fieldsOf(t)
	for d.dec.PeekKind() != '}' {
		tok, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		name := tok.String()
		f, ok := lookupField(fs, name)
		if !ok {
			if err := d.dec.SkipValue(); err != nil { // Decode refuses the field
				return err
			}
			continue
		}
		if path == "" {
			d.keys = append(d.keys, name)
		}
		if err := d.value(f, join(path, name), draft); err != nil {
			return err
		}
	}
	_, err := d.dec.ReadToken() // }
	return err
}

// value reads the value of field f at path: a list is counted against its
// bound (and its objects read in turn), a bounded number noted as sent, a
// top-level scalar drafted.
func (d *scanner) value(f field, path string, draft reflect.Value) error {
	kind := d.dec.PeekKind()
	t := f.typ
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[time.Time]():
		return d.time(path)
	case listOf(t) && kind == '[':
		return d.list(f, t.Elem(), path)
	case t.Kind() == reflect.Struct && kind == '{':
		return d.object(t, path, reflect.Value{})
	case kind == '[' || kind == '{' || !draft.IsValid():
		if kind == '0' && (f.rule.min != nil || f.rule.max != nil) {
			d.sent[path] = true
		}
		return d.dec.SkipValue()
	}
	raw, err := d.dec.ReadValue()
	if err != nil {
		return err
	}
	if kind == '0' && (f.rule.min != nil || f.rule.max != nil) {
		d.sent[path] = true
	}
	_ = json.Unmarshal(raw, draft.FieldByIndex(f.index).Addr().Interface()) // leniently: a wrong type stays zero
	return nil
}

// time reads a time field at path: anything but a string in RFC 3339 (as
// time.Time reads one) is the scan's error, a FieldError naming the field
// — decoding would fail on it without naming the field, quoting the value
// whole.
func (d *scanner) time(path string) error {
	raw, err := d.dec.ReadValue()
	if err != nil {
		return err
	}
	var t time.Time
	if json.Unmarshal(raw, &t) != nil && d.err == nil {
		d.err = &cks.FieldError{Field: path, Expected: "a time in RFC 3339, such as 2026-12-24T18:00:00Z"}
	}
	return nil
}

// list reads the list of field f at path, of items of type elem, counting
// its items: more than the field's bound is the scan's error, and the
// items past it are skipped unread. (An item that is a number is held to
// its range whenever it is there.)
func (d *scanner) list(f field, elem reflect.Type, path string) error {
	if _, err := d.dec.ReadToken(); err != nil { // [
		return err
	}
	for elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	n := 0
	for d.dec.PeekKind() != ']' {
		n++
		var err error
		if n <= f.rule.items && elem.Kind() == reflect.Struct && d.dec.PeekKind() == '{' {
			err = d.object(elem, fmt.Sprintf("%s[%d]", path, n-1), reflect.Value{})
		} else {
			err = d.dec.SkipValue() // an item past the bound: counted, never read
		}
		if err != nil {
			return err
		}
	}
	if n > f.rule.items && d.err == nil {
		d.err = tooMany(path, f.rule, n)
	}
	_, err := d.dec.ReadToken() // ]
	return err
}

// tooMany is the refusal of a list of n items at path, past r's bound.
func tooMany(path string, r rule, n int) error {
	return &cks.FieldError{Field: path, Expected: fmt.Sprintf("a list of at most %d items, got %d", r.items, n)}
}

// lookupField finds the field named name among fs.
func lookupField(fs []field, name string) (field, bool) {
	for _, f := range fs {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

// join is the path of field name under path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// validate holds in (a pointer from NewInput, decoded) to the declarations
// of its fields (over, the operation's own, first) and then to the rules
// the types and the operation add (a Check method, the operation's
// check): the one judgement of every input, whichever surface sent it.
func validate(in any, over fields, sent presence) error {
	v := reflect.ValueOf(in).Elem()
	if v.Kind() != reflect.Struct {
		return nil
	}
	return validateStruct(v, "", over, sent)
}

// validateStruct validates the fields of struct value v at path, then the
// Check methods of v and of its embedded structs.
func validateStruct(v reflect.Value, path string, over fields, sent presence) error {
	for _, f := range fieldsOf(v.Type()) {
		r := f.rule
		if o, ok := over[f.name]; ok {
			r = o
		}
		if err := validateField(v.FieldByIndex(f.index), join(path, f.name), f.name, r, sent); err != nil {
			return err
		}
	}
	return checkMethods(v)
}

// checker is an input type (or an embedded part of one) with a rule of its
// own across its fields.
type checker interface{ Check() error }

// checkMethods runs the Check method of struct value v and of its embedded
// structs, the embedded ones first.
func checkMethods(v reflect.Value) error {
	t := v.Type()
	for i := range t.NumField() {
		if f := t.Field(i); f.Anonymous && f.Type.Kind() == reflect.Struct {
			if err := checkMethods(v.Field(i)); err != nil {
				return err
			}
		}
	}
	if v.CanAddr() {
		if c, ok := v.Addr().Interface().(checker); ok {
			return c.Check()
		}
	}
	return nil
}

// validateField validates field value fv at path, of JSON name name, by
// rule r.
func validateField(fv reflect.Value, path, name string, r rule, sent presence) error {
	if fv.Kind() == reflect.Pointer {
		if fv.IsNil() {
			return nil
		}
		fv = fv.Elem()
		sent = always // a value pointed to was given
	}
	switch {
	case fv.Type() == reflect.TypeFor[json.RawMessage]():
		return nil // a JSON value: the type's and the operation's rules
	case fv.Kind() == reflect.String:
		return validateText(fv.String(), path, name, r)
	case listOf(fv.Type()):
		if fv.Len() > r.items {
			return tooMany(path, r, fv.Len())
		}
		for i := range fv.Len() {
			item, itemPath := fv.Index(i), fmt.Sprintf("%s[%d]", path, i)
			var err error
			switch {
			case item.Kind() == reflect.String:
				err = validateText(item.String(), path, name, r)
				if fe, ok := errors.AsType[*cks.FieldError](err); ok && len(r.enum) == 0 {
					fe.Expected += fmt.Sprintf(" (item %d)", i)
				}
			case item.Kind() == reflect.Struct:
				err = validateStruct(item, itemPath, nil, sent)
			default:
				err = validateNumber(item, path, r, always)
			}
			if err != nil {
				return err
			}
		}
	case fv.Kind() == reflect.Struct:
		return validateStruct(fv, path, nil, sent)
	case fv.CanInt() || fv.CanFloat():
		return validateNumber(fv, path, r, func(string) bool { return sent == nil && !fv.IsZero() || sent != nil && sent(path) })
	}
	return nil
}

// always is the presence of a value that was given.
func always(string) bool { return true }

// validateNumber holds number fv at path to r when it was sent.
func validateNumber(fv reflect.Value, path string, r rule, sent presence) error {
	if r.min == nil && r.max == nil || !sent(path) {
		return nil
	}
	x, integer := 0.0, fv.CanInt()
	if integer {
		x = float64(fv.Int())
	} else {
		x = fv.Float()
	}
	if r.inRange(x) {
		return nil
	}
	got := strconv.FormatFloat(x, 'f', -1, 64)
	if integer {
		got = strconv.FormatInt(fv.Int(), 10)
	}
	return r.refuse(path, fmt.Sprintf("%s, got %s", r.number(integer), got))
}

// validateText holds text s of the field at path (of JSON name name) to
// r: text every store takes, at most its length, not empty or blank when
// r says so, one of r's vocabulary when it has one.
func validateText(s, path, name string, r rule) error {
	if n := r.maxLenOf(name); len(s) > n {
		return &cks.FieldError{Field: path, Expected: fmt.Sprintf("at most %d bytes of text (got %d)", n, len(s))}
	}
	if err := cks.ValidateText(path, s); err != nil {
		return err
	}
	switch {
	case r.is != nil:
		err := r.is(s)
		if fe, ok := errors.AsType[*cks.FieldError](err); ok {
			fe.Field = path // the rule's own name for a field it is one of
		}
		return err
	case (r.nonEmpty || r.segment) && s == "":
		return r.refuse(path, "empty")
	case r.segment && strings.Contains(s, "/"):
		return r.refuse(path, fmt.Sprintf("a single path segment, got %q", s))
	case r.nonBlank && strings.TrimSpace(s) == "":
		return r.refuse(path, "blank")
	case len(r.enum) > 0 && s != "" && !r.allows(s):
		return &cks.FieldError{Field: path, Expected: fmt.Sprintf("one of %s, got %q", strings.Join(r.enum, ", "), s)}
	}
	return nil
}

// allows reports whether s is one of r's vocabulary.
func (r rule) allows(s string) bool {
	if r.fold {
		s = strings.ToUpper(strings.TrimSpace(s))
	}
	for _, e := range r.enum {
		if s == e {
			return true
		}
	}
	return false
}
