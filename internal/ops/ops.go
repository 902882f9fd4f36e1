// Package ops is the one table of the operations a cks hub offers. Each
// operation is declared here once — its name, HTTP method and path, what it
// does, the permission it needs and the resource of its input, its input and
// output types, its success status and the call into the services — and the
// surfaces are registered from the table: the HTTP API (package api), the MCP
// tools (package mcpserver), the CLI's `cks api OP` and the Go client (package
// client), the studio's reads and the OpenAPI contract (OpenAPI). A rule a
// surface would otherwise decide — who may call what, what input is valid, how
// long a call may wait — is decided here or in the services the calls reach,
// so every surface answers the same input with the same words.
//
// Import direction: ops imports the services (ledger, liveness, sweeper,
// auth, store, pipeline) and nothing of the surfaces; the surfaces import ops.
package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/service/schedule"
)

// Surface is a set of the surfaces an operation is offered on.
type Surface uint8

// The surfaces.
const (
	// HTTP: a route of the API under /v1 (every HTTP operation can also be
	// called with `cks api NAME`).
	HTTP Surface = 1 << iota
	// MCP: a tool of the MCP server, named as the operation.
	MCP
	// CLI: a `cks` command of its own builds the operation's input from flags.
	CLI
)

// Need is a set of the services an operation calls; an operation whose
// services a hub lacks is not offered by it.
type Need uint8

// The services.
const (
	NeedLiveness Need = 1 << iota
	NeedTasks
	NeedObjects
	NeedSweepers
	NeedPrincipals
	NeedSchedules
)

// Services are what the calls of the table reach. A nil service leaves out
// the operations that need it (Available).
type Services struct {
	Liveness   *liveness.Service
	Tasks      *ledger.Service
	Objects    *knowledge.Service
	Sweepers   *sweeper.Controller
	Principals *auth.Service
	Schedules  *schedule.Service
	// Bus, when set, hears of changes a call makes that the hub's viewers
	// should see at once (a process asked to stop).
	Bus *events.Bus
	// Changes, when set, tells a waiting call of the changes it waits on
	// (a claim for a process, of that process asked to stop); without it
	// such a claim hears of the stop at its next call.
	Changes ChangeWatcher
	// Clock tells the time of time-relative inputs (stopped_longer_than,
	// token creation); nil means the system clock.
	Clock clock.Clock
	// Logger receives the errors Failure logs; nil means slog.Default().
	Logger *slog.Logger
}

// ChangeWatcher tells of the changes committed to the database, by any
// process (notifier.Notifier's WatchChanges).
type ChangeWatcher interface {
	WatchChanges(ctx context.Context, topics []string, f func(topic string)) error
}

func (s *Services) clock() clock.Clock {
	if s.Clock == nil {
		return clock.System{}
	}
	return s.Clock
}

func (s *Services) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// has reports whether every service of n is present.
func (s *Services) has(n Need) bool {
	for _, c := range []struct {
		need Need
		set  bool
	}{
		{NeedLiveness, s.Liveness != nil}, {NeedTasks, s.Tasks != nil}, {NeedObjects, s.Objects != nil},
		{NeedSweepers, s.Sweepers != nil}, {NeedPrincipals, s.Principals != nil}, {NeedSchedules, s.Schedules != nil},
	} {
		if n&c.need != 0 && !c.set {
			return false
		}
	}
	return true
}

// Hints describe an operation's effects for MCP clients (tool annotations).
// Every operation sets them deliberately (TestHints): OpenWorld always
// (cks is a closed world: false), Destructive whenever it is not ReadOnly
// (the MCP default for an unset one is true), and a ReadOnly one is also
// Idempotent. Idempotent means a repeat with the same input is answered as
// the first call was, so a client may repeat a call whose answer it lost
// (a renewal, a second abort confirmation, a second stop request of a
// process); an operation whose repeat is refused (a second stop of a task,
// a completion under a lease the first one ended) is not Idempotent,
// although the repeat changes nothing (mcpserver's TestIdempotentHintsHold
// repeats each Idempotent one). Destructive is true for an operation that
// ends or interrupts work (a cancel, a stop that aborts a running attempt,
// a process asked to exit), false for one that only adds or moves work on.
type Hints struct {
	ReadOnly    bool
	Idempotent  bool
	Destructive *bool
	OpenWorld   *bool
}

// Spec is what an operation is, apart from its types and its call.
type Spec struct {
	// Name is the operation's snake_case name; it is the MCP tool's name
	// and the argument of `cks api`. Name, Method and Path are those of the
	// cks endpoint (or stream route) the operation is declared on.
	Name string
	// Title is a short human title (the MCP tool's title).
	Title string
	// Method and Path are the HTTP route ("POST", "/v1/tasks/{task_id}/stop").
	// A {wildcard} of Path names the input field it fills, so an input is
	// the same object on every surface: over HTTP its path fields come from
	// the path, the others from the query (GET, DELETE) or the JSON body.
	Method, Path string
	// Summary is one line; Description says everything a caller needs (the
	// MCP tool description, the OpenAPI description).
	Summary, Description string
	// Permission is what the caller must hold (or admin) on the resource.
	Permission string
	// Resource is the template of that resource: a {field} stands for the
	// input field of that name. An operation whose resource is not a plain
	// expansion of it decides it in its Resource function, and the template
	// says what that decides.
	Resource string
	// Status is the HTTP status of success (default 200; 201 for creates).
	Status int
	// Alternate is another status of success, and when it is answered.
	Alternate *Alternate
	// Surfaces are where the operation is offered.
	Surfaces Surface
	// Needs are the services its call reaches.
	Needs Need
	// Secret marks an operation whose output carries a secret that only its
	// caller may ever see (a lease token, a bearer token): no other answer,
	// log or event may repeat it, and a surface that relays it to anyone
	// but the caller must not offer the operation.
	Secret bool
	// Stream marks an endpoint that is not request/response (an event
	// stream, metrics, the OpenAPI document): it is listed for its
	// permission, and the HTTP surface serves it with a handler of its own.
	// It has no input, output or call.
	Stream bool
	// Headers are input fields that, over HTTP, a request header of the
	// same name may give instead of the body (create_task's traceparent:
	// the W3C Trace Context header). A body naming one too must agree.
	Headers []string
	Hints   Hints
}

// Alternate is a second status of success (create_task: 200 on a dedupe hit).
type Alternate struct {
	Status int
	When   string
}

// Operation is one row of the table, whatever its input and output types.
// It is a cks.Operation: a client calls it by its route.
type Operation interface {
	// Spec describes the operation.
	Spec() *Spec
	// Route is the operation's name, HTTP method and path (those of its
	// cks endpoint, which the table declares it on).
	Route() cks.Route
	// InputType and OutputType are the Go types of the input and output
	// (nil for a Stream).
	InputType() reflect.Type
	OutputType() reflect.Type
	// NewInput returns a pointer to a zero input.
	NewInput() any
	// Resource returns the resource the permission is checked on for the
	// input in (a pointer from NewInput).
	Resource(ctx context.Context, s *Services, in any) (string, error)
	// Invoke authorizes the caller in ctx through auth.Require on the
	// input's resource, checks the input (admitInput) and calls the
	// operation.
	Invoke(ctx context.Context, s *Services, in any) (any, error)
	// inputResource reports whether the resource the permission is
	// checked on depends on the input: a {field} of the template, or a
	// resource function.
	inputResource() bool
	// invoke is Invoke for Call, which already admitted in, having checked
	// the permission on the resource checked ("" for none): it is checked again only when
	// in's resource is another.
	invoke(ctx context.Context, s *Services, in any, checked string) (any, error)
	// admitInput checks, once in is decoded, what the call needs beyond
	// the operation's permission, then validates in (validate; sent says
	// which fields were sent, nil for a typed input).
	admitInput(ctx context.Context, s *Services, in any, sent presence) error
	// ownResource reports whether the operation decides its resource
	// itself (not by the expansion of Spec.Resource).
	ownResource() bool
	// Wait is how long a call with input in may wait before it answers
	// beyond an ordinary request (a stop waiting for an abort
	// confirmation: an input that is a cks.Waiter); surfaces extend their
	// deadlines by it.
	Wait(in any) time.Duration
	// StatusOf is the HTTP status of success for output out.
	StatusOf(out any) int
	// InputSchema and OutputSchema are the JSON schemas of the input and
	// output (nil for a Stream).
	InputSchema() *jsonschema.Schema
	OutputSchema() *jsonschema.Schema
	// ToolOutputSchema is OutputSchema with each record it holds written
	// once under $defs and referenced where it recurs (withDefs): the MCP
	// tool's output schema (nil for a Stream).
	ToolOutputSchema() json.RawMessage
}

// Op is an operation with input In and output Out.
type Op[In, Out any] struct {
	spec Spec
	// call does the work; the caller is already authorized.
	call func(ctx context.Context, s *Services, in *In) (Out, error)
	// resource overrides the expansion of Spec.Resource.
	resource func(ctx context.Context, s *Services, in *In) (string, error)
	// status overrides Spec.Status for an output.
	status func(out Out) int
	// docs describe input properties the Go types do not (fields of store
	// types): property path → description. Every path must exist.
	docs map[string]string
	// required, when set, replaces the required properties the input
	// schema infers (fields without omitempty).
	required []string
	// outSchema adjusts the output schema.
	outSchema func(*jsonschema.Schema)
	// fields are the operation's own declarations of its input's
	// top-level fields, over those of the input's type (rules.go).
	fields fields
	// check is the operation's rule of its input beyond the declarations:
	// across fields, or a service's own rule (its exported check), so it
	// is judged before the call with the rest.
	check func(in *In) error
	// also checks, once the input is decoded and before it is validated,
	// the permissions the input needs beyond Spec.Permission (update_task's
	// children).
	also func(ctx context.Context, s *Services, in *In) error

	in, out *jsonschema.Schema
	tool    json.RawMessage
}

// Spec implements Operation.
func (o *Op[In, Out]) Spec() *Spec { return &o.spec }

// Route implements Operation.
func (o *Op[In, Out]) Route() cks.Route { return routeOf(&o.spec) }

// routeOf is the route a spec was declared on.
func routeOf(sp *Spec) cks.Route { return cks.Route{Name: sp.Name, Method: sp.Method, Path: sp.Path} }

// InputType implements Operation.
func (o *Op[In, Out]) InputType() reflect.Type { return reflect.TypeFor[In]() }

// OutputType implements Operation.
func (o *Op[In, Out]) OutputType() reflect.Type { return reflect.TypeFor[Out]() }

// NewInput implements Operation.
func (o *Op[In, Out]) NewInput() any { return new(In) }

// input converts what NewInput returned back; anything else is a bug of the
// surface that passed it.
func (o *Op[In, Out]) input(in any) *In {
	p, ok := in.(*In)
	if !ok {
		panic(fmt.Sprintf("ops: %s given input %T, want %T", o.spec.Name, in, new(In)))
	}
	return p
}

// Resource implements Operation.
func (o *Op[In, Out]) Resource(ctx context.Context, s *Services, in any) (string, error) {
	if o.resource != nil {
		return o.resource(ctx, s, o.input(in))
	}
	return expand(o.spec.Resource, o.input(in))
}

// inputResource implements Operation.
func (o *Op[In, Out]) inputResource() bool {
	return o.resource != nil || strings.Contains(o.spec.Resource, "{")
}

// Offered reports whether the caller in ctx may call op with some input:
// it holds op's permission on op's resource or above it — or, when the
// resource depends on the input, also below the template's fixed part (as
// Call's first check requires, before anything else). A caller op is not
// offered to is refused whatever it sends; one it is offered to may still
// be refused a resource it names. For a batch of checks, pin the caller's
// grants first (auth.PinGrants).
func Offered(ctx context.Context, op Operation) bool {
	sp := op.Spec()
	if !op.inputResource() {
		return auth.Require(ctx, sp.Permission, sp.Resource) == nil
	}
	fixed, _, _ := strings.Cut(sp.Resource, "/{")
	if fixed == "" {
		fixed = auth.ResourceRoot
	}
	return auth.RequireWithin(ctx, sp.Permission, fixed) == nil
}

// Invoke implements Operation.
func (o *Op[In, Out]) Invoke(ctx context.Context, s *Services, in any) (any, error) {
	return o.Do(ctx, s, o.input(in))
}

// invoke implements Operation.
func (o *Op[In, Out]) invoke(ctx context.Context, s *Services, in any, checked string) (any, error) {
	p := o.input(in)
	if err := authorize(ctx, s, o, p, checked); err != nil {
		return nil, err
	}
	return o.run(ctx, s, p)
}

// admitInput implements Operation.
func (o *Op[In, Out]) admitInput(ctx context.Context, s *Services, in any, sent presence) error {
	p := o.input(in)
	if o.also != nil {
		if err := o.also(ctx, s, p); err != nil {
			return err
		}
	}
	if err := validate(p, o.fields, sent); err != nil {
		return err
	}
	if o.check != nil {
		return o.check(p)
	}
	return nil
}

// ownResource implements Operation.
func (o *Op[In, Out]) ownResource() bool { return o.resource != nil }

// Do is Invoke with a typed input: the call of a surface (the studio) that
// builds the input itself. The caller's permission is checked first, then
// the input as Call checks a decoded one (a field is taken as sent when it
// is not zero).
func (o *Op[In, Out]) Do(ctx context.Context, s *Services, in *In) (Out, error) {
	var zero Out
	if err := Authorize(ctx, s, o, in); err != nil {
		return zero, err
	}
	if err := o.admitInput(ctx, s, in, nil); err != nil {
		return zero, err
	}
	return o.run(ctx, s, in)
}

// run calls o; a call that changed a task tells the hub's viewers on the
// Bus (events.TasksChanged), as a process stop does, and one that wrote to
// the knowledge store tells them events.ObjectsChanged (a version write
// publishes no change topic unless it makes the object claimable).
func (o *Op[In, Out]) run(ctx context.Context, s *Services, in *In) (Out, error) {
	out, err := o.call(ctx, s, in)
	if err == nil && s.Bus != nil {
		switch {
		case changesTasks(&o.spec):
			s.Bus.Publish(events.Event{Type: events.TasksChanged, At: s.clock().Now(), TaskIDs: o.tasksNamed(ctx, s, in)})
		case !o.spec.Hints.ReadOnly && strings.HasPrefix(o.spec.Resource, auth.ResourceObjects):
			s.Bus.Publish(events.Event{Type: events.ObjectsChanged, At: s.clock().Now()})
		}
	}
	return out, err
}

// tasksNamed returns the task whose resource a call on in is checked on
// (/tasks/ID: the task acted on, or the parent a child is created under),
// or nil when it names none (a list, a claim, a bulk call).
func (o *Op[In, Out]) tasksNamed(ctx context.Context, s *Services, in *In) []int64 {
	res, err := o.Resource(ctx, s, in)
	if err != nil {
		return nil
	}
	id, ok := strings.CutPrefix(res, auth.ResourceTasks+"/")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil {
		return nil
	}
	return []int64{n}
}

// changesTasks reports whether a successful call of sp changes a task a
// viewer would see: any operation on the tasks that is not read-only,
// except the lease renewal (a heartbeat every few seconds per executor
// would only make every board re-read).
func changesTasks(sp *Spec) bool {
	return !sp.Hints.ReadOnly && strings.HasPrefix(sp.Resource, auth.ResourceTasks) && sp.Name != TouchTask.spec.Name
}

// Authorize checks the permission Invoke checks first: that the caller in
// ctx holds op's permission on in's resource. A surface that reads more
// than op returns (the studio's counts) checks with it that the caller may
// read what op would.
func Authorize(ctx context.Context, s *Services, op Operation, in any) error {
	return authorize(ctx, s, op, in, "")
}

// authorize is Authorize, skipping the permission check when in's resource
// is checked, the one Call's gate already checked.
func authorize(ctx context.Context, s *Services, op Operation, in any, checked string) error {
	res, err := op.Resource(ctx, s, in)
	if err != nil || res == checked {
		return err
	}
	return auth.Require(ctx, op.Spec().Permission, res)
}

// Wait implements Operation: the MaxWait of an input that is a cks.Waiter
// (the abort wait of stop_task and update_task), else 0.
func (o *Op[In, Out]) Wait(in any) time.Duration {
	if w, ok := any(o.input(in)).(cks.Waiter); ok {
		return w.MaxWait()
	}
	return 0
}

// StatusOf implements Operation.
func (o *Op[In, Out]) StatusOf(out any) int {
	if o.status != nil {
		if v, ok := out.(Out); ok {
			return o.status(v)
		}
	}
	return successStatus(o.spec.Status)
}

// successStatus is a Spec.Status, 200 when unset.
func successStatus(s int) int {
	if s == 0 {
		return http.StatusOK
	}
	return s
}

// InputSchema implements Operation.
func (o *Op[In, Out]) InputSchema() *jsonschema.Schema { return o.in }

// OutputSchema implements Operation.
func (o *Op[In, Out]) OutputSchema() *jsonschema.Schema { return o.out }

// ToolOutputSchema implements Operation.
func (o *Op[In, Out]) ToolOutputSchema() json.RawMessage { return o.tool }

// stream is a Stream row.
type stream struct{ spec Spec }

func (e *stream) Spec() *Spec                       { return &e.spec }
func (e *stream) Route() cks.Route                  { return routeOf(&e.spec) }
func (e *stream) InputType() reflect.Type           { return nil }
func (e *stream) OutputType() reflect.Type          { return nil }
func (e *stream) NewInput() any                     { return &struct{}{} }
func (e *stream) Wait(any) time.Duration            { return 0 }
func (e *stream) StatusOf(any) int                  { return http.StatusOK }
func (e *stream) InputSchema() *jsonschema.Schema   { return nil }
func (e *stream) OutputSchema() *jsonschema.Schema  { return nil }
func (e *stream) inputResource() bool               { return false }
func (e *stream) ToolOutputSchema() json.RawMessage { return nil }

func (e *stream) Resource(context.Context, *Services, any) (string, error) {
	return e.spec.Resource, nil
}

func (e *stream) Invoke(context.Context, *Services, any) (any, error) {
	return nil, fmt.Errorf("ops: %s is a stream, served by the HTTP surface's own handler", e.spec.Name)
}

func (e *stream) invoke(ctx context.Context, s *Services, in any, _ string) (any, error) {
	return e.Invoke(ctx, s, in)
}

func (e *stream) admitInput(context.Context, *Services, any, presence) error { return nil }
func (e *stream) ownResource() bool                                          { return false }

// Available returns the operations of table offered on surface by a hub with
// services s, in table order.
func Available(table []Operation, surface Surface, s *Services) []Operation {
	var out []Operation
	for _, op := range table {
		if op.Spec().Surfaces&surface != 0 && s.has(op.Spec().Needs) {
			out = append(out, op)
		}
	}
	return out
}

// Lookup returns the operation of the table named name.
func Lookup(name string) (Operation, bool) {
	i := slices.IndexFunc(table, func(op Operation) bool { return op.Spec().Name == name })
	if i < 0 {
		return nil, false
	}
	return table[i], true
}

// All returns every operation of the table, in table order (a copy).
func All() []Operation { return slices.Clone(table) }

// Names returns the names of ops.
func Names(ops []Operation) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = op.Spec().Name
	}
	return out
}

// define makes the operation of endpoint e (its name, method and path are
// e's; its input and output types are e's by construction) and derives its
// schemas; a declaration that does not fit its types (a path wildcard or
// resource field the input lacks, a doc naming no property) panics at
// start-up.
func define[In, Out any](e cks.Endpoint[In, Out], o *Op[In, Out]) *Op[In, Out] {
	sp := &o.spec
	setRoute(sp, e.Route())
	if sp.Name == "" || sp.Permission == "" || sp.Resource == "" || sp.Needs == 0 {
		panic(fmt.Sprintf("ops: %q: name, permission, resource and needs are required", sp.Name))
	}
	if sp.Surfaces&HTTP != 0 && (sp.Method == "" || sp.Path == "") {
		panic(fmt.Sprintf("ops: %s: an HTTP operation needs a method and a path", sp.Name))
	}
	fields := cks.InputFields(reflect.TypeFor[In]())
	for _, w := range Wildcards(sp.Path) {
		if _, ok := fields[w]; !ok {
			panic(fmt.Sprintf("ops: %s: path wildcard {%s} is no field of %v", sp.Name, w, reflect.TypeFor[In]()))
		}
	}
	if o.resource == nil {
		for _, w := range Wildcards(sp.Resource) {
			if _, ok := fields[w]; !ok {
				panic(fmt.Sprintf("ops: %s: resource field {%s} is no field of %v", sp.Name, w, reflect.TypeFor[In]()))
			}
		}
	}
	o.in = inputSchema[In](sp.Name, o.docs, o.required, o.fields)
	o.out = outputSchema[Out](sp.Name)
	if o.outSchema != nil {
		o.outSchema(o.out)
		portable(o.out)
	}
	tool, err := withDefs(o.out, reflect.TypeFor[Out]())
	if err != nil {
		panic(fmt.Sprintf("ops: %s: output schema: %v", sp.Name, err))
	}
	o.tool = tool
	return o
}

// setRoute gives sp route r; a spec that names another route is a
// declaration error.
func setRoute(sp *Spec, r cks.Route) {
	if (sp.Name != "" && sp.Name != r.Name) || (sp.Method != "" && sp.Method != r.Method) || (sp.Path != "" && sp.Path != r.Path) {
		panic(fmt.Sprintf("ops: %s %s %s is declared on the route %s %s %s", sp.Name, sp.Method, sp.Path, r.Name, r.Method, r.Path))
	}
	sp.Name, sp.Method, sp.Path = r.Name, r.Method, r.Path
}

// streamOf makes the Stream row of route r.
func streamOf(r cks.Route, sp Spec) Operation {
	setRoute(&sp, r)
	sp.Stream = true
	sp.Surfaces = HTTP
	return &stream{spec: sp}
}
