package ops

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/service/schedule"
)

// The bounds of the inputs, declared once here and read by both the check
// of every call (check.go: before an input is decoded, the count of every
// list; once it is, every range, length and vocabulary) and the input
// schemas (schema.go: minimum, maximum, maxLength, minLength, pattern,
// enum, maxItems, default), so what a schema states is what a call is held
// to.

// rule is what one input field may hold. A zero rule bounds nothing but a
// text's length (cks.MaxTextLen of the field's name).
type rule struct {
	// min and max bound a number (every item of a list of numbers).
	min, max *float64
	// def is the value an absent field stands for: a field that is absent
	// (or, in a typed input, zero) is not held to min and max.
	def any
	// items bounds a list's length. Every list of every input has one.
	items int
	// maxLen bounds a text's bytes (every item's of a list of texts);
	// 0 is cks.MaxTextLen of the field's name.
	maxLen int
	// nonBlank requires a text with something but white space in it.
	nonBlank bool
	// nonEmpty requires a text of at least one byte.
	nonEmpty bool
	// enum is the closed vocabulary of a text (of each item of a list);
	// fold compares a value upper-cased and trimmed (task states).
	enum []string
	fold bool
	// segment requires a text that is one segment of a resource path:
	// not empty, without "/".
	segment bool
	// pattern is the regular expression the schema states of a text; is
	// is then the rule that holds a call to it.
	pattern string
	// expected, when set, says what the field holds in the refusals of
	// its min, max, nonEmpty and nonBlank, as the services always said it.
	expected string
	// is, when set, is the service's own rule of the text (after its
	// length and its bytes are checked), the one function of that rule;
	// nonEmpty and nonBlank then only say what it requires, for the
	// schema (TestSchemasStateTheBounds holds them to it).
	is func(string) error
}

// num is a rule of a number from lo to hi with default def (nil: none).
func num(lo, hi float64, def any) rule { return rule{min: &lo, max: &hi, def: def} }

// from is a rule of a number of at least lo.
func from(lo float64) rule { return rule{min: &lo} }

// id is the rule of an id: a positive integer.
var id = from(1)

// ids is the rule of a list of at most n ids.
func ids(n int) rule { r := from(1); r.items = n; return r }

// names is the rule of a list of at most cks.MaxNames names, each one of
// vocab when it is set.
func names(vocab ...string) rule { return rule{items: cks.MaxNames, enum: vocab} }

// with is r saying what its field holds when it refuses a value.
func (r rule) with(expected string) rule { r.expected = expected; return r }

// taskType is the rule of a task type (each of a list's, with items).
var taskType = rule{nonEmpty: true, maxLen: cks.MaxTaskTypeLen, pattern: cks.TaskTypePattern,
	is: func(s string) error { return cks.ValidateTaskType("type", s) }}

// taskTypes is the rule of a list of task types a worker claims (a
// single "" is none: any type).
var taskTypes = func() rule { r := taskType; r.items, r.nonEmpty = cks.MaxNames, false; return r }()

// processKind is the rule of a process kind; processKinds of a list of
// them (a filter).
var (
	processKind = rule{nonEmpty: true, maxLen: cks.MaxProcessKindLen, pattern: cks.ProcessKindPattern,
		is: func(s string) error { return cks.ValidateProcessKind("process_kind", s) }}
	processKinds = func() rule { r := processKind; r.items, r.nonEmpty = cks.MaxNames, false; return r }()
)

// scheduleName is the rule of a schedule's name.
var scheduleName = rule{nonEmpty: true, maxLen: cks.MaxScheduleNameLen, pattern: cks.ScheduleNamePattern,
	is: func(s string) error { return cks.ValidateScheduleName("name", s) }}

// limitName is the rule of a concurrency limit's name.
var limitName = rule{nonEmpty: true, maxLen: cks.MaxLimitNameLen, pattern: cks.ScheduleNamePattern,
	is: func(s string) error { return cks.ValidateLimitName("name", s) }}

// concurrencyKeys is the rule of a task's concurrency keys.
var concurrencyKeys = rule{items: cks.MaxConcurrencyKeys, nonEmpty: true, maxLen: cks.MaxConcurrencyKeyLen,
	pattern: cks.ConcurrencyKeyPattern, is: func(s string) error {
		_, err := cks.ValidateConcurrencyKeys("concurrency_keys", []string{s})
		return err
	}}

// tokens is the rule of a count of tokens of a usage report; maxTokens of
// a task's budget of them (0: none).
var (
	tokens    = num(0, cks.MaxUsageTokens, nil).with(fmt.Sprintf("a count of tokens from 0 to %d", int64(cks.MaxUsageTokens)))
	maxTokens = num(0, cks.MaxUsageTokens, nil).with(fmt.Sprintf("a budget of tokens from 1 to %d (0 or absent: none)", int64(cks.MaxUsageTokens)))
)

// costRule is the rule of a cost or a budget of one: an exact decimal
// string (cks.ParseCost).
var costRule = rule{maxLen: 32, pattern: cks.CostPattern, is: func(s string) error {
	if s == "" {
		return nil // none
	}
	_, err := cks.ParseCost("cost", s)
	return err
}}

// instanceID is the rule of a process instance id.
var instanceID = rule{nonEmpty: true, maxLen: cks.MaxProcessKindLen, pattern: cks.ProcessKindPattern,
	is: func(s string) error { return cks.ValidateInstanceID("instance_id", s) }}

// states is the rule of a list of task states, in either case.
var states = rule{items: cks.MaxNames, enum: taskStates, fold: true}

// oneOf is the rule of a text that is one of vocab.
func oneOf(vocab ...string) rule { return rule{enum: vocab} }

// fields are the rules of an input struct's fields, by JSON name.
type fields map[string]rule

// The vocabularies of the inputs' closed sets.
var (
	taskStates = func() []string {
		var out []string
		for _, st := range ledger.All {
			out = append(out, string(st))
		}
		return out
	}()
	taskSorts = func() []string {
		var out []string
		for _, s := range cks.TaskSorts {
			out = append(out, string(s))
		}
		return out
	}()
	taskOrders = []string{string(cks.TaskOrderByID), string(cks.TaskOrderStoppedFirst)}
	sweeperIDs = sweeper.IDs()
)

// leaseRange is the rule of a lease in seconds (lease_s).
var leaseRange = num(ledger.MinLease.Seconds(), ledger.MaxLease.Seconds(), ledger.DefaultLease.Seconds())

// listLimit is the rule of a page's limit.
var listLimit = num(1, cks.MaxListLimit, cks.DefaultListLimit)

// declared are the rules of every input struct type's fields, by the type
// that declares them (an embedded struct's fields are its own). A field
// of no declaration is held to the zero rule.
var declared = map[reflect.Type]fields{
	typeOf[cks.TaskInput]():       {"task_id": id},
	typeOf[cks.PauseTypeInput]():  {"type": taskType},
	typeOf[cks.TypeInput]():       {"type": taskType},
	typeOf[cks.AnswerTaskInput](): {"task_id": id, "text": {nonBlank: true, is: ledger.ValidateAnswer}},
	typeOf[cks.TaskReasonInput](): {"task_id": id},
	typeOf[cks.StopTaskInput]():   {"task_id": id, "reason": {nonBlank: true, is: ledger.ValidateStopReason}},
	typeOf[cks.UpdateTaskInput](): {"task_id": id},
	typeOf[cks.TaskPatch](): {"priority": num(0, cks.MaxPriority, nil),
		"add_depends_on": ids(cks.MaxDependsOn).with("ids of existing tasks"), "remove_depends_on": ids(cks.MaxDependsOn).with("ids of existing tasks"),
		"add_children": {items: cks.MaxAddChildren}, "cancel_children": ids(cks.MaxCancelChildren).with("ids of existing tasks"),
		"concurrency_keys": concurrencyKeys, "max_tokens": maxTokens, "max_cost": costRule},
	typeOf[cks.NewTask](): {"type": taskType, "max_tokens": maxTokens, "max_cost": costRule,
		"priority":     num(0, cks.MaxPriority, 0),
		"max_attempts": num(1, cks.MaxMaxAttempts, cks.DefaultMaxAttempts),
		"parent_id":    id.with("the id of an existing task"), "depends_on": ids(cks.MaxDependsOn).with("ids of existing tasks"),
		"concurrency_keys": concurrencyKeys},
	typeOf[cks.ListTasksInput](): {"state": states, "type": names(), "cursor": from(0).with("a task id"),
		"limit": listLimit, "order": oneOf(taskOrders...), "sort": oneOf(taskSorts...), "parent_id": id},
	typeOf[cks.CountTasksInput]():     {"state": states, "type": names()},
	typeOf[cks.TaskMatch]():           {"q": {maxLen: cks.MaxSearchText}, "created_by": {maxLen: cks.MaxSearchText}},
	typeOf[cks.TaskStatsInput]():      {"minutes": num(1, cks.MaxStatsMinutes, cks.DefaultStatsMinutes), "step_minutes": num(1, cks.MaxStatsMinutes, 1)},
	typeOf[cks.UnclaimedTypesInput](): {"after_s": num(1, 86400, cks.DefaultUnclaimedAfter.Seconds())},
	typeOf[cks.TaskSelection](): {"task_ids": ids(ledger.MaxBulk).with("ids of existing tasks"),
		"state": states, "type": names(), "cursor": from(0).with("a task id"),
		"limit": num(1, ledger.MaxBulk, ledger.MaxBulk)},
	typeOf[cks.BulkStopTasksInput](): {"reason": {nonBlank: true, is: ledger.ValidateStopReason}},
	typeOf[cks.ClaimTasksInput](): {"types": taskTypes, "n": num(1, cks.MaxListLimit, 1),
		"wait_s":  num(0, ledger.MaxClaimWait.Seconds(), 0).with(fmt.Sprintf("a wait of 0 to %.0f seconds", ledger.MaxClaimWait.Seconds())),
		"lease_s": leaseRange.with(fmt.Sprintf("a lease of %.0f to %.0f seconds", ledger.MinLease.Seconds(), ledger.MaxLease.Seconds()))},
	typeOf[cks.LeaseInput](): {"task_id": id,
		"lease_token": rule{nonEmpty: true}.with("the lease token the claim (or review claim) answered")},
	typeOf[cks.AddEvidenceInput](): {"kind": rule{nonEmpty: true}.with("a non-empty evidence kind")},
	typeOf[cks.AppendOutputInput](): {"stream": {maxLen: cks.MaxOutputStreamLen, pattern: cks.OutputStreamPattern,
		is: cks.ValidateOutputStream}},
	typeOf[cks.GetOutputInput](): {"task_id": id, "after": from(0).with("a seq of 0 or more (the next_after of the previous page)"),
		"limit": num(1, cks.MaxOutputPage, cks.DefaultOutputPage)},
	typeOf[cks.RecordDecisionInput](): {"kind": rule{nonEmpty: true}.with("a non-empty decision kind"),
		"derived_from_revision": from(1).with("the task revision the decision was made from (a revision starts at 1)")},
	typeOf[cks.ReuseWorkspaceInput](): {"path": rule{nonEmpty: true}.with("the path of a workspace an earlier attempt recorded"),
		"derived_from_revision": from(1).with("the task revision the decision was made from (a revision starts at 1)")},
	typeOf[cks.QuestionInput](): {"question": {nonBlank: true, is: ledger.ValidateQuestion}},
	typeOf[cks.ClaimReviewInput](): {"task_id": id,
		"lease_s": leaseRange.with(fmt.Sprintf("a lease of %.0f to %.0f seconds", ledger.MinLease.Seconds(), ledger.MaxLease.Seconds()))},
	typeOf[cks.ListProcessesInput](): {"kind": processKinds, "limit": listLimit},
	typeOf[cks.SweeperInput]():       {"agent_id": oneOf(sweeperIDs...)},
	typeOf[cks.ProcessInput]():       {"process_kind": processKind.with("a process kind or an instance id")},
	typeOf[cks.ReportProcessInput](): {"process_kind": processKind, "instance_id": instanceID,
		"pid":                 from(1).with("a positive process id"),
		"liveness_interval_s": num(1, liveness.MaxReportInterval.Seconds(), liveness.DefaultInterval.Seconds()),
		"current_task_id":     id.with("a positive task id, or none when idle"),
		"current_task_type": rule{maxLen: cks.MaxTaskTypeLen, pattern: cks.TaskTypePattern, is: func(s string) error {
			if s == "" {
				return nil // idle
			}
			return cks.ValidateTaskType("current_task_type", s)
		}},
		"task_types": taskTypes},
	typeOf[cks.SubmitResearchInput](): {"question": rule{nonBlank: true, maxLen: pipeline.MaxQuestionLen}.with("a non-empty question")},
	typeOf[cks.ObjectInput]():         {"object_id": id},
	typeOf[cks.ListObjectsInput](): {"status": names(), "kind": names(), "q": {maxLen: cks.MaxSearchText},
		"cursor": from(0).with("an object id"), "limit": listLimit},
	typeOf[cks.WriteVersionInput](): {"object_id": id, "base_version": from(1)},
	typeOf[cks.CreateTokenInput]():  {"grants": {items: cks.MaxGrants}, "task_id": id.with("a positive task id")},
	typeOf[cks.TokenInput]():        {"id": rule{nonEmpty: true}.with("a principal's id (list_tokens lists them)")},
	typeOf[cks.SessionInput]():      {"id": rule{nonEmpty: true}.with("a session id (list_sessions lists them)")},
	typeOf[cks.ScheduleInput]():     {"name": scheduleName},
	typeOf[cks.NewSchedule](): {"name": scheduleName,
		"cron":      {nonEmpty: true, maxLen: cks.MaxCronLen, is: schedule.ValidateCron},
		"time_zone": {maxLen: cks.MaxTimeZoneLen, is: schedule.ValidateTimeZone},
		"misfire":   oneOf(cks.MisfirePolicies...)},
	typeOf[cks.ScheduleTask](): {"type": taskType,
		"priority":         num(0, cks.MaxPriority, 0),
		"max_attempts":     num(1, cks.MaxMaxAttempts, cks.DefaultMaxAttempts),
		"concurrency_keys": concurrencyKeys},
	typeOf[cks.LimitInput](): {"name": limitName,
		"pattern": {nonEmpty: true, maxLen: cks.MaxConcurrencyKeyLen, pattern: cks.LimitPatternPattern,
			is: func(s string) error { return cks.LimitInput{Name: "x", Pattern: s, MaxRunning: 1}.Validate() }},
		"max_running": num(0, cks.MaxLimitRunning, nil),
		"starts":      num(0, cks.MaxLimitRunning, nil),
		"interval": {maxLen: 32, is: func(s string) error {
			_, err := cks.LimitInput{Interval: cks.Duration(s)}.IntervalDuration()
			return err
		}},
		"max_tokens": maxTokens, "max_cost": costRule,
		"window": {maxLen: 32, is: func(s string) error {
			_, err := cks.LimitInput{Window: cks.Duration(s)}.WindowDuration()
			return err
		}}},
	typeOf[cks.LimitNameInput](): {"name": limitName},
	typeOf[cks.ReportUsageInput](): {"input_tokens": tokens, "output_tokens": tokens, "model": {maxLen: cks.MaxModelLen},
		"cost": costRule, "currency": oneOf(cks.CurrencyUSD)},
	typeOf[cks.GetUsageInput](): {"by": names(cks.UsageGroupings...), "task_id": id, "limit": num(1, cks.MaxUsageRows, cks.DefaultListLimit),
		"since": {maxLen: 32, is: func(s string) error {
			if s == "" {
				return nil // 24h
			}
			_, err := usageDuration("since", s, time.Second, cks.MaxUsageSince)
			return err
		}},
		"every": {maxLen: 32, is: func(s string) error {
			if s == "" {
				return nil // no buckets
			}
			_, err := usageDuration("every", s, cks.MinUsageEvery, cks.MaxUsageSince)
			return err
		}},
		"type": {maxLen: cks.MaxTaskTypeLen}, "key": {maxLen: cks.MaxConcurrencyKeyLen}, "model": {maxLen: cks.MaxModelLen}},
	typeOf[cks.CheckStoredInput](): {"what": oneOf(cks.StoredKinds[:]...), "cursor": from(0).with("an id")},
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// field is one JSON field of an input struct type.
type field struct {
	name  string
	typ   reflect.Type
	index []int
	// rule is the field's declaration (of the struct type declaring it).
	rule rule
}

// fieldsCache holds fieldsOf's answers, by struct type.
var fieldsCache sync.Map

// fieldsOf returns the JSON fields of struct type t (cks.InputFields:
// promoted ones included, as encoding/json sees them), in their order in
// t, each with its rule.
func fieldsOf(t reflect.Type) []field {
	if v, ok := fieldsCache.Load(t); ok {
		return v.([]field)
	}
	var out []field
	for name, index := range cks.InputFields(t) {
		owner := t
		if len(index) > 1 {
			owner = t.FieldByIndex(index[:len(index)-1]).Type
		}
		out = append(out, field{name: name, typ: t.FieldByIndex(index).Type, index: index, rule: declared[owner][name]})
	}
	slices.SortFunc(out, func(a, b field) int { return slices.Compare(a.index, b.index) })
	fieldsCache.Store(t, out)
	return out
}

// listOf reports whether t is a list an input holds (a slice, cks.Names
// included; a json.RawMessage is a JSON value, not a list).
func listOf(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8
}

// maxLen is the most bytes a text of field name may hold under r.
func (r rule) maxLenOf(name string) int {
	if r.maxLen > 0 {
		return r.maxLen
	}
	return cks.MaxTextLen(name)
}

// number says what a number of r is: "an integer from 1 to 1000", "a
// number from 1 to 86400", "an integer of at least 1".
func (r rule) number(integer bool) string {
	what := "a number"
	if integer {
		what = "an integer"
	}
	format := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	switch {
	case r.min != nil && r.max != nil:
		return fmt.Sprintf("%s from %s to %s", what, format(*r.min), format(*r.max))
	case r.min != nil:
		return fmt.Sprintf("%s of at least %s", what, format(*r.min))
	case r.max != nil:
		return fmt.Sprintf("%s of at most %s", what, format(*r.max))
	}
	return what
}

// inRange reports whether x is within r's bounds.
func (r rule) inRange(x float64) bool {
	return !math.IsNaN(x) && (r.min == nil || x >= *r.min) && (r.max == nil || x <= *r.max)
}

// refuse is the FieldError of r's field named path: r's own words when it
// has them, else expected.
func (r rule) refuse(path, expected string) error {
	if r.expected != "" {
		expected = r.expected
	}
	return &cks.FieldError{Field: path, Expected: expected}
}
