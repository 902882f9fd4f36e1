package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// scheduleGroup is `cks schedule`: schedules, a task from a template at
// each slot of a cron expression (issue 42).
var scheduleGroup = group{name: "schedule", commands: []command{
	opCommand("create", ops.CreateSchedule, opSpec[cks.NewSchedule, cks.Schedule]{
		in:    inputSpec{args: []string{"name", "cron"}, metas: map[string]string{"cron": "CRON"}},
		table: printSchedule[cks.NewSchedule]("created"),
	}),
	opCommand("list", ops.ListSchedules, opSpec[struct{}, cks.ScheduleList]{
		table: func(x *reply[struct{}, cks.ScheduleList]) error {
			printSchedules(x.w, x.out.Schedules)
			return nil
		},
	}),
	opCommand("show", ops.GetSchedule, opSpec[cks.ScheduleInput, cks.Schedule]{table: printSchedule[cks.ScheduleInput]("")}),
	opCommand("pause", ops.PauseSchedule, opSpec[cks.ScheduleInput, cks.Schedule]{table: printSchedule[cks.ScheduleInput]("paused")}),
	opCommand("resume", ops.ResumeSchedule, opSpec[cks.ScheduleInput, cks.Schedule]{table: printSchedule[cks.ScheduleInput]("resumed")}),
	opCommand("trigger", ops.TriggerSchedule, opSpec[cks.ScheduleInput, cks.ScheduleFired]{
		table: func(x *reply[cks.ScheduleInput, cks.ScheduleFired]) error {
			_, err := fmt.Fprintf(x.w, "schedule %s fired: task %d %s\n", x.out.Schedule.Name, x.out.Task.ID, x.out.Task.State)
			return err
		},
	}),
	opCommand("delete", ops.DeleteSchedule, opSpec[cks.ScheduleInput, struct{}]{
		json: func(in *cks.ScheduleInput, _ struct{}) any { return map[string]string{"deleted": in.Name} },
		table: func(x *reply[cks.ScheduleInput, struct{}]) error {
			_, err := fmt.Fprintf(x.w, "deleted schedule %s\n", x.in.Name)
			return err
		},
	}),
}}

// printSchedule prints one schedule, after a line saying what was done
// (verb; none for a read).
func printSchedule[In any](verb string) func(x *reply[In, cks.Schedule]) error {
	return func(x *reply[In, cks.Schedule]) error {
		if verb != "" {
			fmt.Fprintf(x.w, "schedule %s %s\n\n", x.out.Name, verb)
		}
		printSchedules(x.w, []cks.Schedule{x.out})
		if len(x.out.NextRuns) > 0 {
			fmt.Fprintln(x.w, "\nNext runs:")
			for _, r := range x.out.NextRuns {
				fmt.Fprintf(x.w, "  %s\n", r.Format(time.RFC3339))
			}
		}
		return nil
	}
}

func printSchedules(w io.Writer, ss []cks.Schedule) {
	if len(ss) == 0 {
		fmt.Fprintln(w, "no schedules")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCRON\tZONE\tMISFIRE\tSTATE\tTASK TYPE\tNEXT RUN\tLAST FIRE\tLAST TASK")
	for _, s := range ss {
		state, next, last, task := "running", "-", "never", "-"
		if s.Paused {
			state = strings.TrimSpace("paused " + s.PausedBy)
		}
		if len(s.NextRuns) > 0 {
			next = s.NextRuns[0].Format(time.RFC3339)
		}
		if s.LastFiredAt != nil {
			last = s.LastFiredAt.Format(time.RFC3339)
		}
		if s.LastTaskID != 0 {
			task = fmt.Sprint(s.LastTaskID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Cron, s.TimeZone, s.Misfire, state, s.Task.Type,
			next, last, task)
	}
	tw.Flush()
}
