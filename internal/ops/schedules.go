package ops

import (
	"context"
	"net/http"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/schedule"
)

// The schedule operations (issue 42 item 4): a named, persistent rule that
// creates a task from its template at each slot of a cron expression, fired
// by the elected leader hub exactly once per slot.

const scheduleNote = " A schedule creates a task from its template (task: type, title, description, payload, priority, " +
	"max_attempts) at each slot of its cron expression (five fields, a descriptor such as @hourly, or \"@every 30s\", whose " +
	"slots are whole multiples of the interval) read in its time_zone (IANA, default UTC). The maintenance leader among the " +
	"hubs on the database fires each slot exactly once: the task and the schedule's mark (last_slot) are one commit, and the " +
	"task's dedupe_key names the slot (schedule:NAME@TIME). A slot no hub fired within a minute (every hub down, a failover) " +
	"is a misfire: misfire skip lets it go (the next slot fires), run_once creates one task for all the slots missed. " +
	"Resources: /schedules and /schedules/NAME."

// scheduleTaskDocs describe the fields of cks.ScheduleTask, a schedule's
// task template.
var scheduleTaskDocs = map[string]string{
	"type":             "the type of the tasks it creates; agents claim tasks by type",
	"title":            "their title",
	"description":      "what to do",
	"payload":          "any JSON value the executor needs",
	"priority":         "0 (lowest, default) to 1000; higher is claimed first",
	"max_attempts":     "attempts before a task is dead-lettered as FAILED (default 3)",
	"concurrency_keys": "the tasks' concurrency keys (create_task's)",
}

// scheduleResource is the resource template of an operation on one
// schedule.
const scheduleResource = auth.ResourceSchedules + "/{name}"

// CreateSchedule is create_schedule.
var CreateSchedule = define(cks.OpCreateSchedule, &Op[cks.NewSchedule, cks.Schedule]{
	spec: Spec{
		Title:   "Create schedule",
		Summary: "create a schedule: a task from a template at each slot of a cron expression",
		Description: "Create a schedule, running (or paused with paused true); its first slot is the first after now. " +
			"Answers the schedule with its next_runs. A name already taken is a conflict. Needs create on /schedules." + scheduleNote,
		Permission: auth.PermCreate, Resource: auth.ResourceSchedules,
		Status: http.StatusCreated, Surfaces: HTTP | MCP | CLI, Needs: NeedSchedules,
		Hints: Hints{Destructive: new(false), OpenWorld: new(false)},
	},
	docs: map[string]string{
		"name": "the schedule's name: letters, digits and _ - . : (its resource is /schedules/NAME)",
		"cron": "when it fires: five fields (minute hour day-of-month month day-of-week, \"*/5 * * * *\"), a descriptor " +
			"(@hourly, @daily, @weekly, @monthly, @yearly) or \"@every 30s\" (at least 1s; slots at whole multiples)",
		"time_zone": "the IANA time zone the expression is read in, such as Europe/Berlin (default UTC)",
		"misfire":   "what a slot no hub fired within a minute becomes: skip (default: let go) or run_once (one task for the missed slots)",
		"task":      "the task each slot creates: type (required), title, description, payload, priority, max_attempts",
		"paused":    "create it paused (resume_schedule starts it)",
	},
	check: func(n *cks.NewSchedule) error {
		_, err := schedule.Validate(*n)
		return err
	},
	call: func(ctx context.Context, s *Services, n *cks.NewSchedule) (cks.Schedule, error) {
		in := *n
		in.CreatedBy = actor(ctx)
		return s.Schedules.Create(ctx, in)
	},
	required: []string{"name", "cron", "task"},
})

// ListSchedules is list_schedules.
var ListSchedules = define(cks.OpListSchedules, &Op[struct{}, cks.ScheduleList]{
	spec: Spec{
		Title:   "List schedules",
		Summary: "every schedule with its next five fire times and its last fire",
		Description: "Every schedule, by name, under \"schedules\": its expression, zone, misfire policy and task template, " +
			"whether it is paused and by whom, next_runs (its next five slots; none while paused), last_slot, last_fired_at " +
			"and last_task_id." + scheduleNote,
		Permission: auth.PermRead, Resource: auth.ResourceSchedules,
		Surfaces: HTTP | MCP | CLI, Needs: NeedSchedules, Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, _ *struct{}) (cks.ScheduleList, error) {
		l, err := s.Schedules.List(ctx)
		return cks.ScheduleList{Schedules: l}, err
	},
})

// scheduleOp declares an operation on one schedule, named by the path.
func scheduleOp[Out any](e cks.Endpoint[cks.ScheduleInput, Out], sp Spec, call func(ctx context.Context, s *Services, name string) (Out, error)) *Op[cks.ScheduleInput, Out] {
	sp.Resource = scheduleResource
	sp.Surfaces, sp.Needs = HTTP|MCP|CLI, NeedSchedules
	sp.Description += scheduleNote
	return define(e, &Op[cks.ScheduleInput, Out]{
		spec: sp,
		call: func(ctx context.Context, s *Services, in *cks.ScheduleInput) (Out, error) {
			return call(ctx, s, in.Name)
		},
	})
}

// GetSchedule is get_schedule.
var GetSchedule = scheduleOp(cks.OpGetSchedule, Spec{
	Title:       "Schedule",
	Summary:     "one schedule with its next five fire times and its last fire",
	Description: "One schedule, in the shape of a list_schedules row. An unknown name is not_found.",
	Permission:  auth.PermRead, Hints: readOnly,
}, func(ctx context.Context, s *Services, name string) (cks.Schedule, error) {
	return s.Schedules.Get(ctx, name)
})

// PauseSchedule is pause_schedule.
var PauseSchedule = scheduleOp(cks.OpPauseSchedule, Spec{
	Title:   "Pause schedule",
	Summary: "stop a schedule firing until resumed (persistent)",
	Description: "Pause a schedule: no slot fires until resume_schedule, on any hub; paused_by records the caller. " +
		"Pausing a paused schedule changes nothing. Needs control on /schedules/NAME.",
	Permission: auth.PermControl, Hints: Hints{Idempotent: true, Destructive: new(false), OpenWorld: new(false)},
}, func(ctx context.Context, s *Services, name string) (cks.Schedule, error) {
	return s.Schedules.Pause(ctx, name, actor(ctx))
})

// ResumeSchedule is resume_schedule.
var ResumeSchedule = scheduleOp(cks.OpResumeSchedule, Spec{
	Title:   "Resume schedule",
	Summary: "let a paused schedule fire again, from its next slot",
	Description: "Resume a paused schedule: it fires from the first slot after now; the slots that passed while it was " +
		"paused are not owed, at either misfire policy. Resuming a running schedule changes nothing. Needs control on " +
		"/schedules/NAME.",
	Permission: auth.PermControl, Hints: Hints{Idempotent: true, Destructive: new(false), OpenWorld: new(false)},
}, func(ctx context.Context, s *Services, name string) (cks.Schedule, error) {
	return s.Schedules.Resume(ctx, name)
})

// TriggerSchedule is trigger_schedule.
var TriggerSchedule = scheduleOp(cks.OpTriggerSchedule, Spec{
	Title:   "Trigger schedule",
	Summary: "fire a schedule now, once",
	Description: "Fire a schedule now, once, paused or not: a task from its template, created by the caller, outside its " +
		"slots (its last_slot does not move: the next slot fires as it would have). Answers the schedule and the task. " +
		"Needs control on /schedules/NAME.",
	Permission: auth.PermControl, Status: http.StatusCreated,
	Hints: Hints{Destructive: new(false), OpenWorld: new(false)},
}, func(ctx context.Context, s *Services, name string) (cks.ScheduleFired, error) {
	return s.Schedules.Trigger(ctx, name, actor(ctx))
})

// DeleteSchedule is delete_schedule.
var DeleteSchedule = scheduleOp(cks.OpDeleteSchedule, Spec{
	Title:   "Delete schedule",
	Summary: "delete a schedule (its tasks stay)",
	Description: "Delete a schedule: no slot of it fires any more; the tasks it created stay. An unknown name is " +
		"not_found. Needs control on /schedules/NAME.",
	Permission: auth.PermControl, Status: http.StatusNoContent,
	Hints: Hints{Destructive: new(true), OpenWorld: new(false)},
}, func(ctx context.Context, s *Services, name string) (struct{}, error) {
	return struct{}{}, s.Schedules.Delete(ctx, name)
})
