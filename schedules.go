package cks

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Schedules (issue 42 item 4): a named, persistent rule that creates a task
// from a template at each slot of a cron expression, fired by the elected
// leader hub exactly once per slot (docs/flow-control.md#schedules).

// The misfire policies of a schedule: what the leader does with the slots
// that passed while no hub fired them (every hub down, the schedule paused
// never counts: a paused schedule's slots are not owed).
const (
	// MisfireSkip fires no missed slot: only a slot fired on time (within
	// MisfireGrace of it) creates a task; the next future slot fires.
	MisfireSkip = "skip"
	// MisfireRunOnce fires one task for all the slots missed, at once,
	// for the latest of them; then the schedule goes on.
	MisfireRunOnce = "run_once"
)

// MisfirePolicies are the misfire policies, the default first.
var MisfirePolicies = []string{MisfireSkip, MisfireRunOnce}

// MisfireGrace is how late a slot may fire and still be on time: a slot
// the leader reaches later than this was missed (the misfire policy
// decides). It covers a leader's failover (within the leader TTL and one
// interval, config.DefaultLeaderTTL) and a busy database.
const MisfireGrace = time.Minute

// Bounds of a schedule's texts.
const (
	// MaxScheduleNameLen bounds a schedule's name.
	MaxScheduleNameLen = 100
	// ScheduleNamePattern is the rule of a schedule's name (one segment of
	// its resource path /schedules/NAME), as the input schemas state it.
	ScheduleNamePattern = `^[A-Za-z0-9][A-Za-z0-9_.:-]*$`
	// MaxCronLen bounds a cron expression.
	MaxCronLen = 200
	// MaxTimeZoneLen bounds a time zone's name.
	MaxTimeZoneLen = 100
	// ScheduleNextRuns is how many next fire times a schedule lists.
	ScheduleNextRuns = 5
)

var scheduleNameRE = regexp.MustCompile(ScheduleNamePattern)

// ExpectedScheduleName is what a refused schedule name was expected to be.
var ExpectedScheduleName = fmt.Sprintf("a schedule name: letters, digits and _ - . : (starting with a letter or digit, at most %d bytes)", MaxScheduleNameLen)

// ValidateScheduleName reports a FieldError naming field unless s is a
// schedule name (ScheduleNamePattern, at most MaxScheduleNameLen bytes).
func ValidateScheduleName(field, s string) error {
	return validateName(field, s, scheduleNameRE, MaxScheduleNameLen, ExpectedScheduleName)
}

// ScheduleTask is the task a schedule creates at each slot: the fields of
// create_task a recurring task has (no parent, dependencies, dedupe key or
// delay: the schedule sets its own dedupe key per slot).
type ScheduleTask struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	// Payload must be a JSON value; empty means {}.
	Payload  json.RawMessage `json:"payload,omitempty"`
	Priority int             `json:"priority,omitempty"`
	// MaxAttempts is 1..MaxMaxAttempts; 0 means DefaultMaxAttempts.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// ConcurrencyKeys are the task's keys (NewTask.ConcurrencyKeys).
	ConcurrencyKeys []string `json:"concurrency_keys,omitempty"`
}

// NewTask is the task t makes, by createdBy, with dedupe key key ("" for
// none): DedupeOnce, so a slot's key is used once ever.
func (t ScheduleTask) NewTask(createdBy, key string) NewTask {
	return NewTask{Type: t.Type, Title: t.Title, Description: t.Description, Payload: t.Payload,
		Priority: t.Priority, MaxAttempts: t.MaxAttempts, ConcurrencyKeys: t.ConcurrencyKeys,
		CreatedBy: createdBy, DedupeKey: key, DedupeOnce: key != ""}
}

// Validate reports the first field of t a schedule must refuse, named
// under field ("task.type"), and returns t with its defaults (payload {},
// max attempts) filled in.
func (t ScheduleTask) Validate(field string) (ScheduleTask, error) {
	n, err := t.NewTask("", "").Validate()
	if err != nil {
		if fe, ok := errors.AsType[*FieldError](err); ok {
			return t, &FieldError{Field: field + "." + fe.Field, Expected: fe.Expected}
		}
		return t, err
	}
	t.Payload, t.MaxAttempts, t.ConcurrencyKeys = n.Payload, n.MaxAttempts, n.ConcurrencyKeys
	return t, nil
}

// NewSchedule is the input of create_schedule.
type NewSchedule struct {
	// Name names the schedule (ScheduleNamePattern), unique.
	Name string `json:"name"`
	// Cron is when it fires: five fields (minute hour day-of-month month
	// day-of-week, "*/5 * * * *"), a descriptor (@hourly, @daily, @weekly,
	// @monthly, @yearly) or an interval ("@every 30s", at least a second).
	Cron string `json:"cron"`
	// TimeZone is the IANA time zone the expression is read in
	// ("Europe/Berlin"); "" is UTC.
	TimeZone string `json:"time_zone,omitempty"`
	// Misfire is MisfireSkip ("" too) or MisfireRunOnce.
	Misfire string `json:"misfire,omitempty"`
	// Task is the task each slot creates.
	Task ScheduleTask `json:"task"`
	// Paused creates the schedule paused.
	Paused bool `json:"paused,omitempty"`
	// CreatedBy is the caller (set by the surfaces, never read from JSON).
	CreatedBy string `json:"-"`
}

// Schedule is a stored schedule, as every read of one answers it.
type Schedule struct {
	Name     string       `json:"name"`
	Cron     string       `json:"cron"`
	TimeZone string       `json:"time_zone"`
	Misfire  string       `json:"misfire"`
	Task     ScheduleTask `json:"task"`
	Paused   bool         `json:"paused"`
	// PausedBy is who paused it ("" when running).
	PausedBy  string    `json:"paused_by,omitempty"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// LastSlot is the latest slot the schedule has dealt with (fired, or
	// skipped by its misfire policy); absent before the first.
	LastSlot *time.Time `json:"last_slot,omitempty"`
	// LastFiredAt and LastTaskID are the last fire (a slot's or a
	// trigger's): when, and the task it created; absent before the first.
	LastFiredAt *time.Time `json:"last_fired_at,omitempty"`
	LastTaskID  int64      `json:"last_task_id,omitempty"`
	// NextRuns are the next ScheduleNextRuns slots, in UTC (none while
	// paused).
	NextRuns []time.Time `json:"next_runs"`
}

// ScheduleList is the output of list_schedules.
type ScheduleList struct {
	Schedules []Schedule `json:"schedules"`
}

// ScheduleInput names a schedule (the path of its operations).
type ScheduleInput struct {
	Name string `json:"name"`
}

// ScheduleFired is the output of trigger_schedule: the schedule after the
// fire and the task it created.
type ScheduleFired struct {
	Schedule Schedule `json:"schedule"`
	Task     Task     `json:"task"`
}
