package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// The flags and positional arguments of an operation's input come from the
// input's type, walked as the hub reads an input (cks.InputFields: the
// fields by JSON name, embedded structs' promoted), and from its schema
// (ops.Operation.InputSchema, which the MCP tools and the OpenAPI document
// are made of): its path fields and any the command names are positional
// arguments, every other field is a flag named after it (acceptance_criteria
// is --acceptance-criteria) and typed by its Go type, its help its schema
// description. Only the flags given are set, so a field a flag leaves out
// keeps its zero value (or, for a pointer, stays unset: `task update
// --title ""` clears the title, no --title leaves it). Whether a value is
// one the operation takes is the hub's to say: the CLI refuses only what it
// cannot read (an integer flag that is no integer, a JSON flag that is no
// JSON), as a usage error.

// inputSpec is what a command adds to its input's type.
type inputSpec struct {
	// args are input fields read from positional arguments, after the path
	// fields (the operation's path wildcards, in order), which always are.
	args []string
	// metas are the placeholders of positional fields in usage where they
	// are not the field name's last word upper-cased (task_id is ID).
	metas map[string]string
	// names are the flag names of fields whose flag is not the field's
	// name with dashes for underscores.
	names map[string]string
	// values are flags of the CLI's own syntax for fields (--add-child
	// TYPE:TITLE, --grant PERMISSION:RESOURCE).
	values map[string]func() fieldValue
	// optional are required fields the command fills in itself when their
	// flag is not given (object edit's base and content).
	optional []string
}

// fieldValue is the flag of one input field.
type fieldValue interface {
	flag.Value
	// value is what the flag read, as a Go value that converts to the
	// field's type (its pointed-to type, for a pointer field); an error is
	// a usage error naming the flag.
	value() (any, error)
	// meta is the flag's placeholder in help (TEXT, N, TYPE:TITLE); "" for
	// a boolean.
	meta() string
}

// repeatable is a flag that may be given more than once, each time adding
// to a list.
type repeatable interface{ repeats() }

// inputFlags are the flags and positional arguments of one command's input.
type inputFlags struct {
	op    ops.Operation
	fs    *flag.FlagSet
	args  []param
	flags map[string]param // by flag name
}

// param is one input field read from the command line.
type param struct {
	field string       // its JSON name
	meta  string       // its placeholder, for a positional argument
	typ   reflect.Type // its type, pointers removed
	value fieldValue   // nil for a positional argument
}

// bindInput registers on fs a flag for every field of op's input that is
// not a positional argument.
func bindInput(fs *flag.FlagSet, op ops.Operation, spec inputSpec) *inputFlags {
	b := &inputFlags{op: op, fs: fs, flags: map[string]param{}}
	t := op.InputType()
	fields := cks.InputFields(t)
	positional := append(cks.Wildcards(op.Spec().Path), spec.args...)
	for _, name := range positional {
		b.args = append(b.args, param{field: name, meta: or(spec.metas[name], metaOf(name)), typ: fieldType(t, fields[name])})
	}
	props := op.InputSchema().Properties
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if slices.Contains(positional, name) {
			continue
		}
		p := param{field: name, typ: fieldType(t, fields[name])}
		fl := or(spec.names[name], strings.ReplaceAll(name, "_", "-"))
		if mk := spec.values[name]; mk != nil {
			p.value = mk()
		} else {
			p.value = valueFor(fl, p.typ, nounOf(op))
		}
		usage := ""
		if s := props[name]; s != nil {
			usage = s.Description
		}
		if slices.Contains(op.InputSchema().Required, name) && !slices.Contains(spec.optional, name) && !strings.Contains(usage, "required") {
			usage += " (required)"
		}
		if _, ok := p.value.(repeatable); ok {
			usage += " (repeatable)"
		}
		fs.Var(p.value, fl, usage)
		b.flags[fl] = p
	}
	return b
}

// fieldType is the type of the field at index of struct t, pointers removed.
func fieldType(t reflect.Type, index []int) reflect.Type {
	ft := t.FieldByIndex(index).Type
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	return ft
}

// metaOf is a positional field's placeholder: the last word of its name,
// upper-cased (task_id is ID, process_kind KIND, text TEXT).
func metaOf(field string) string {
	return strings.ToUpper(field[strings.LastIndexByte(field, '_')+1:])
}

// nounOf is what the ids of op's input name: its resource's first segment,
// singular (/tasks/{task_id} → task); "" for the root.
func nounOf(op ops.Operation) string {
	seg, _, _ := strings.Cut(strings.TrimPrefix(op.Spec().Resource, "/"), "/")
	if s, ok := strings.CutSuffix(seg, "ses"); ok {
		return s + "s" // processes → process
	}
	return strings.TrimSuffix(seg, "s")
}

// metas are the placeholders of the positional arguments, in order.
func (b *inputFlags) metas() []string {
	out := make([]string, len(b.args))
	for i, p := range b.args {
		out[i] = p.meta
	}
	return out
}

// input is the operation's input (a pointer from NewInput) with the
// positional arguments pos and the flags given.
func (b *inputFlags) input(pos []string) (any, error) {
	if err := b.checkCount(pos); err != nil {
		return nil, err
	}
	in := b.op.NewInput()
	for i, p := range b.args {
		v, err := p.parse(pos[i])
		if err != nil {
			return nil, err
		}
		assign(cks.InputField(in, p.field), v)
	}
	var err error
	b.fs.Visit(func(f *flag.Flag) {
		p, ok := b.flags[f.Name]
		if !ok || err != nil {
			return
		}
		var v any
		if v, err = p.value.value(); err == nil {
			assign(cks.InputField(in, p.field), v)
		}
	})
	return in, err
}

// given reports whether the flag of input field field was given.
func (b *inputFlags) given(field string) bool {
	set := false
	b.fs.Visit(func(f *flag.Flag) {
		p, ok := b.flags[f.Name]
		set = set || ok && p.field == field
	})
	return set
}

// nameFlag makes a refusal of the hub that blames an input field this
// command reads from a flag name the flag: `invalid --reason: expected …`
// for the hub's `invalid reason: expected …` (or the flag after the
// message, when it does not open so). Any other error is returned as it is.
func (b *inputFlags) nameFlag(err error) error {
	var ce *cks.Error
	if !errors.As(err, &ce) || ce.Field == "" {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(b.flags)) {
		if b.flags[name].field != ce.Field {
			continue
		}
		named := *ce
		if said := "invalid " + ce.Field + ":"; strings.Contains(ce.Message, said) {
			named.Message = strings.Replace(ce.Message, said, "invalid --"+name+":", 1)
		} else {
			named.Message += " (--" + name + ")"
		}
		return &named
	}
	return err
}

// checkCount refuses a number of positional arguments other than the
// command's, as a usage error naming them.
func (b *inputFlags) checkCount(pos []string) error {
	metas := b.metas()
	switch {
	case len(pos) == len(metas):
		return nil
	case len(metas) == 0:
		return fmt.Errorf("%w: %s takes no arguments, got %q", errUsage, b.fs.Name(), pos)
	case len(metas) == 1:
		return fmt.Errorf("%w: %s needs exactly one %s", errUsage, b.fs.Name(), metas[0])
	}
	return fmt.Errorf("%w: %s needs %s", errUsage, b.fs.Name(), strings.Join(metas, " and "))
}

// parse reads a positional argument: text as it is, or an integer (whether
// it names anything is the hub's to say).
func (p param) parse(text string) (any, error) {
	switch p.typ.Kind() {
	case reflect.String:
		return text, nil
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			noun := strings.ReplaceAll(strings.TrimSuffix(p.field, "_id"), "_", " ")
			return nil, fmt.Errorf("%w: expected %s ID (an integer), got %q", errUsage, article(noun), text)
		}
		return n, nil
	}
	panic(fmt.Sprintf("cks: positional field %s of type %v", p.field, p.typ))
}

// article is noun with "a" or "an" before it.
func article(noun string) string {
	if noun != "" && strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// assign sets field f to v, allocating what f points to.
func assign(f reflect.Value, v any) {
	for f.Kind() == reflect.Pointer {
		if f.IsNil() {
			f.Set(reflect.New(f.Type().Elem()))
		}
		f = f.Elem()
	}
	f.Set(reflect.ValueOf(v).Convert(f.Type()))
}

// valueFor is the flag of a field of type t: text, an integer, a number, a
// boolean, a duration (cks.Duration), a time (RFC 3339), a list (repeated or comma-separated
// items), or a JSON value (json.RawMessage, and any other type, decoded
// into it).
func valueFor(name string, t reflect.Type, noun string) fieldValue {
	switch t {
	case reflect.TypeFor[cks.Duration]():
		return &scalar[string]{name: "DURATION", parse: parseDuration}
	case reflect.TypeFor[time.Time]():
		return &scalar[time.Time]{name: "TIME", parse: parseTime}
	case reflect.TypeFor[json.RawMessage]():
		return &jsonValue{flag: name, typ: t}
	}
	switch t.Kind() {
	case reflect.String:
		return &scalar[string]{name: "TEXT", parse: func(s string) (string, error) { return s, nil }}
	case reflect.Bool:
		return &scalar[bool]{parse: parseBool}
	case reflect.Int, reflect.Int64:
		return &scalar[int64]{name: "N", parse: parseInt}
	case reflect.Float64:
		return &scalar[float64]{name: "X", parse: parseFloat}
	case reflect.Slice:
		switch t.Elem().Kind() {
		case reflect.String:
			return new(stringList)
		case reflect.Int64:
			return &int64List{noun: noun}
		}
	}
	return &jsonValue{flag: name, typ: t}
}

// scalar is a flag of one value, read by parse; a boolean one may be given
// without a value (--wait, --wait=false).
type scalar[T any] struct {
	v     T
	parse func(string) (T, error)
	name  string // the placeholder in help
}

func (s *scalar[T]) String() string {
	if s == nil || s.parse == nil {
		return ""
	}
	return fmt.Sprint(s.v)
}

func (s *scalar[T]) Set(text string) (err error) {
	s.v, err = s.parse(text)
	return err
}

func (s *scalar[T]) value() (any, error) { return s.v, nil }
func (s *scalar[T]) meta() string        { return s.name }

func (s *scalar[T]) IsBoolFlag() bool {
	_, ok := any(s.v).(bool)
	return ok
}

func parseInt(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("expected an integer, got %q", s)
	}
	return n, nil
}

func parseFloat(s string) (float64, error) {
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("expected a number, got %q", s)
	}
	return n, nil
}

func parseBool(s string) (bool, error) {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("expected true or false, got %q", s)
	}
	return b, nil
}

// parseTime reads a time flag: RFC 3339 (2026-12-24T18:00:00Z, or with an
// offset), as the API writes times.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("expected a time in RFC 3339 (such as 2026-12-24T18:00:00Z), got %q", s)
	}
	return t, nil
}

// parseDuration reads a duration flag (30s, 2m), sent as written once it
// reads as a Go duration: whether the operation takes it is the hub's to
// say.
func parseDuration(s string) (string, error) {
	if _, err := time.ParseDuration(s); err != nil {
		return "", fmt.Errorf("expected a duration such as 30s or 2m, got %q", s)
	}
	return s, nil
}

// stringList is a repeatable text flag (also comma-separated).
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}

func (l *stringList) value() (any, error) { return []string(*l), nil }
func (l *stringList) meta() string        { return "A,B" }
func (l *stringList) repeats()            {}

// int64List is a repeatable flag of ids (also comma-separated); noun says
// what they name.
type int64List struct {
	ids  []int64
	noun string
}

func (l *int64List) String() string {
	if l == nil {
		return ""
	}
	return strings.Trim(fmt.Sprint(l.ids), "[]")
}

func (l *int64List) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil || id <= 0 {
			return fmt.Errorf("expected %s id, got %q", article(l.noun), part)
		}
		l.ids = append(l.ids, id)
	}
	return nil
}

func (l *int64List) value() (any, error) { return l.ids, nil }
func (l *int64List) meta() string        { return "ID,ID" }
func (l *int64List) repeats()            {}

// jsonValue is a JSON flag: a JSON value as written, or @FILE for the
// contents of FILE. It is read when the input is built, so a refusal names
// the flag as `--payload: expected a JSON value`; a field of a type other
// than json.RawMessage gets the value decoded into it.
type jsonValue struct {
	flag string
	typ  reflect.Type
	text string
}

func (v *jsonValue) String() string {
	if v == nil {
		return ""
	}
	return v.text
}

func (v *jsonValue) Set(s string) error { v.text = s; return nil }
func (v *jsonValue) meta() string       { return "JSON|@FILE" }

func (v *jsonValue) value() (any, error) {
	text := v.text
	if file, ok := strings.CutPrefix(text, "@"); ok {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%w: --%s: %w", errUsage, v.flag, err)
		}
		text = string(b)
	}
	raw, err := jsonFlag(v.flag, text)
	switch {
	case err != nil:
		return nil, err
	case v.typ == reflect.TypeFor[json.RawMessage]():
		return raw, nil
	case raw == nil:
		return reflect.Zero(v.typ).Interface(), nil
	}
	out := reflect.New(v.typ)
	if err := json.Unmarshal(raw, out.Interface()); err != nil {
		return nil, fmt.Errorf("%w: --%s: %v", errUsage, v.flag, err)
	}
	return out.Elem().Interface(), nil
}

// jsonFlag reads the text of a JSON flag (--payload, --metadata): empty
// means the flag was not given (nil), anything else must be a JSON value,
// which is sent as written.
func jsonFlag(name, val string) (json.RawMessage, error) {
	if val == "" {
		return nil, nil
	}
	if !json.Valid([]byte(val)) {
		return nil, fmt.Errorf("%w: --%s: expected a JSON value, got %q (not valid JSON)", errUsage, name, val)
	}
	return json.RawMessage(val), nil
}
