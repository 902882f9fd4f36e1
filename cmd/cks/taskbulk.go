package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/ops"
)

// bulkGroup is `cks task bulk`: the bulk operations, each over --ids or a
// filter (--state, --type, --stopped-longer-than). A filter that matches
// more than one call takes (--limit, at most 500) is gone through call by
// call, from each answer's next_cursor, with a progress line on stderr
// after each; the outcomes of all of them are printed at the end.
var bulkGroup = group{name: "task bulk", commands: []command{
	bulkCommand("stop", ops.BulkStopTasks, func(in *cks.BulkStopTasksInput) *cks.TaskSelection { return &in.TaskSelection }),
	bulkCommand("start", ops.BulkStartTasks, bulkSelection),
	bulkCommand("cancel", ops.BulkCancelTasks, bulkSelection),
	bulkCommand("retry", ops.BulkRetryTasks, bulkSelection),
}}

// bulkGroupCommand is `cks task bulk VERB`, a command of taskGroup.
var bulkGroupCommand = command{name: "bulk", args: "stop|start|cancel|retry",
	summary: "stop, start, cancel or retry many tasks (--ids, or --state/--type/--stopped-longer-than), each task's outcome",
	sub:     &bulkGroup,
	run: func(ctx context.Context, _ string, args []string, e env) error {
		return bulkGroup.run(ctx, args, e)
	}}

func bulkSelection(in *cks.BulkTasksInput) *cks.TaskSelection { return &in.TaskSelection }

// bulkSpec is the input spec of a bulk command: task_ids is --ids.
var bulkSpec = inputSpec{names: map[string]string{"task_ids": "ids"}}

// bulkCommand is the command name of the bulk operation op, whose input's
// selection sel returns.
func bulkCommand[In any](name string, op *ops.Op[In, cks.BulkResult], sel func(*In) *cks.TaskSelection) command {
	probe := bindInput(flag.NewFlagSet(name, flag.ContinueOnError), op, bulkSpec)
	return command{name: name, args: strings.Join(probe.metas(), " "), summary: op.Spec().Summary, op: op, in: bulkSpec,
		run: func(ctx context.Context, full string, args []string, e env) error {
			v, cf, b, err := readInput(op, bulkSpec, full, args, e)
			if err != nil {
				return err
			}
			c, err := cf.client(e)
			if err != nil {
				return err
			}
			in := v.(*In)
			res, err := callBulk(ctx, c, op, in, sel(in), func(r cks.BulkResult) {
				fmt.Fprintf(e.stderr, "cks %s: %d tasks so far (%d done, %d refused), more follow\n", full, len(r.Tasks), r.Done, r.Refused)
			})
			if len(res.Tasks) > 0 || err == nil { // what was done, also before a later call failed
				var perr error
				if cf.json {
					perr = printJSON(e.stdout, res)
				} else {
					perr = printBulk(e.stdout, full, res)
				}
				err = cmp.Or(err, perr)
			}
			return cmp.Or(b.nameFlag(err), bulkUnconfirmed(res))
		}}
}

// callBulk calls op with in until its answer has no next cursor (a filter
// is gone through call by call, sel's cursor moved on), calling progress
// after every call that more follow, and returns the outcomes of them all.
// An error of a later call is returned with what the earlier ones did.
func callBulk[In any](ctx context.Context, c *client.Client, op *ops.Op[In, cks.BulkResult], in *In, sel *cks.TaskSelection,
	progress func(cks.BulkResult)) (cks.BulkResult, error) {
	total := cks.BulkResult{Tasks: []cks.BulkTask{}}
	for {
		var out cks.BulkResult
		if err := c.Call(ctx, op, in, &out); err != nil {
			total.Count()
			return total, err
		}
		total.Action, total.Tasks = out.Action, append(total.Tasks, out.Tasks...)
		total.Count()
		if out.NextCursor == 0 {
			return total, nil
		}
		progress(total)
		sel.Cursor = out.NextCursor
	}
}

// printBulk prints each task's outcome and the counts.
func printBulk(w io.Writer, full string, r cks.BulkResult) error {
	fmt.Fprintf(w, "%s: %d done, %d refused", full, r.Done, r.Refused)
	if r.Pending+r.Unconfirmed > 0 {
		fmt.Fprintf(w, "; %d aborts pending, %d UNCONFIRMED", r.Pending, r.Unconfirmed)
	}
	fmt.Fprintln(w)
	if len(r.Tasks) == 0 {
		_, err := fmt.Fprintln(w, "no tasks selected")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFROM\tNOW\tOUTCOME")
	for _, t := range r.Tasks {
		what := string(t.Outcome)
		switch {
		case t.Outcome == cks.BulkRefused:
			what += ": " + t.Reason
		case t.Abort != nil:
			what += "; " + abortText(t.Abort)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", t.TaskID, or(string(t.From), "-"), or(string(t.State), "-"), what)
	}
	return tw.Flush()
}

// bulkUnconfirmed is the exit status of a bulk answer: errAbortUnconfirmed
// (exit 3) when an executor did not confirm its abort, as for task stop.
func bulkUnconfirmed(r cks.BulkResult) error {
	if r.Unconfirmed == 0 {
		return nil
	}
	var execs []string
	for _, t := range r.Tasks {
		if t.Abort != nil && t.Abort.Outcome == cks.AbortUnconfirmed {
			execs = append(execs, fmt.Sprintf("%s (task %d)", t.Abort.Executor, t.TaskID))
		}
	}
	return fmt.Errorf("%w: %d executors may still be running: %s", errAbortUnconfirmed, r.Unconfirmed, strings.Join(execs, ", "))
}
