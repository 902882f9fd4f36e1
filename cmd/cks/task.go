package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/ops"
)

// taskGroup is `cks task`: the operator operations of the task ledger.
var taskGroup = group{name: "task", commands: []command{
	opCommand("list", ops.ListTasks, opSpec[cks.ListTasksInput, cks.TaskPage]{
		summary: "a page of tasks; without --state (or --order id) the STOPPED tasks first, with how long they have " +
			"been held and any unconfirmed abort, then the others most recently changed first (a task that just failed on top); " +
			"without a hub, read from the data directory's database",
		prepare: stoppedFirst,
		offline: true,
		table: func(x *reply[cks.ListTasksInput, cks.TaskPage]) error {
			printListing(x.w, x.out, time.Now())
			return nil
		},
	}),
	opCommand("stats", ops.TaskStats, opSpec[cks.TaskStatsInput, cks.TaskStats]{
		table: func(x *reply[cks.TaskStatsInput, cks.TaskStats]) error {
			printTaskStats(x.w, x.out)
			return nil
		},
	}),
	opCommand("unclaimed", ops.ListUnclaimedTypes, opSpec[cks.UnclaimedTypesInput, cks.UnclaimedTypes]{
		table: func(x *reply[cks.UnclaimedTypesInput, cks.UnclaimedTypes]) error {
			printUnclaimed(x.w, x.out, time.Now())
			return nil
		},
	}),
	opCommand("show", ops.GetTask, opSpec[cks.TaskInput, cks.Task]{
		summary: "one task: its current attempt, earlier attempts, aborts and events; without a hub, read from the data " +
			"directory's database",
		offline: true,
		table: func(x *reply[cks.TaskInput, cks.Task]) error {
			printTask(x.w, x.out)
			printUnclaimedType(x.ctx, x.c, x.w, x.out)
			return nil
		},
	}),
	taskLogsCommand(),
	opCommand("create", ops.CreateTask, opSpec[cks.NewTask, cks.CreatedTask]{
		in:    inputSpec{names: taskFlagNames},
		json:  func(_ *cks.NewTask, out cks.CreatedTask) any { return out.Task },
		table: printCreated,
	}),
	opCommand("update", ops.UpdateTask, opSpec[cks.UpdateTaskInput, cks.UpdateResult]{
		in: inputSpec{names: taskFlagNames, values: map[string]func() fieldValue{
			"add_children": func() fieldValue { return new(childList) },
		}},
		summary: "edit a task as one operation: a material edit of a running task is stop → apply → start; prints the path taken",
		table:   printUpdated,
		check:   func(_ *cks.UpdateTaskInput, out cks.UpdateResult) error { return unconfirmed(out.Task.ID, out.Abort) },
	}),
	opCommand("stop", ops.StopTask, opSpec[cks.StopTaskInput, cks.TaskStopResult]{
		table: printStopped,
		check: func(_ *cks.StopTaskInput, out cks.TaskStopResult) error { return unconfirmed(out.Task.ID, out.Abort) },
	}),
	opCommand("start", ops.StartTask, opSpec[cks.TaskReasonInput, cks.Task]{table: printRestarted("started")}),
	opCommand("retry", ops.RetryTask, opSpec[cks.TaskReasonInput, cks.Task]{table: printRestarted("retried")}),
	opCommand("answer", ops.AnswerTask, opSpec[cks.AnswerTaskInput, cks.Task]{
		in: inputSpec{args: []string{"text"}}, table: printVerb[cks.AnswerTaskInput]("answered"),
	}),
	opCommand("cancel", ops.CancelTask, opSpec[cks.TaskReasonInput, cks.Task]{table: printVerb[cks.TaskReasonInput]("cancelled")}),
	opCommand("claim", ops.ClaimTasks, opSpec[cks.ClaimTasksInput, cks.ClaimedTasks]{
		summary: "lease up to --n OPEN tasks (--running: straight into RUNNING), each with its lease token (shown this once)",
		table:   printClaimed,
	}),
	bulkGroupCommand,
}}

// taskFlagNames are the task fields whose flags have names of their own.
var taskFlagNames = map[string]string{
	"acceptance_criteria": "criteria",
	"parent_id":           "parent",
	"add_depends_on":      "add-dep",
	"remove_depends_on":   "remove-dep",
	"add_children":        "add-child",
	"cancel_children":     "cancel-child",
	"attempt_timeout":     "timeout",
	"concurrency_keys":    "key",
}

// stoppedFirst asks for the operator's view of the ledger, unless the
// listing selects states itself or names its order: its STOPPED tasks
// first (list_tasks' order stopped_first), then — unless it names its sort
// — the others most recently changed first, so that what just happened (a
// task that failed, one waiting for an answer) is on the first page
// however many tasks there are (issue 39.10: in id order it was the
// oldest hundred).
func stoppedFirst(in *cks.ListTasksInput) error {
	if in.Order == "" && len(in.State) == 0 && in.StoppedLongerThan == "" {
		in.Order = cks.TaskOrderStoppedFirst
		if in.Sort == "" {
			in.Sort = cks.TaskSortUpdatedDesc
		}
	}
	return nil
}

// childList is the repeatable --add-child TYPE:TITLE flag of task update.
// It is not comma-separated: a title may hold commas.
type childList []cks.NewTask

func (l *childList) String() string { return fmt.Sprint(len(*l), " children") }

func (l *childList) Set(v string) error {
	typ, title, _ := strings.Cut(v, ":")
	if typ = strings.TrimSpace(typ); typ == "" {
		return fmt.Errorf("expected TYPE:TITLE, got %q", v)
	}
	*l = append(*l, cks.NewTask{Type: typ, Title: strings.TrimSpace(title)})
	return nil
}

func (l *childList) value() (any, error) { return []cks.NewTask(*l), nil }
func (l *childList) meta() string        { return "TYPE:TITLE" }
func (l *childList) repeats()            {}

func printCreated(x *reply[cks.NewTask, cks.CreatedTask]) error {
	t := x.out.Task
	verb := "created"
	if !x.out.Created {
		verb = "exists (dedupe key " + t.DedupeKey + ")"
	}
	_, err := fmt.Fprintf(x.w, "task %d %s: %s\n", t.ID, verb, t.State)
	return err
}

func printUpdated(x *reply[cks.UpdateTaskInput, cks.UpdateResult]) error {
	res := x.out
	line := fmt.Sprintf("task %d updated (%s): path %s, revision %d, now %s", res.Task.ID,
		strings.Join(x.in.TaskPatch.Fields(), ", "), res.Path, res.Task.Revision, res.Task.State)
	none := "no abort (the task was not running)"
	if res.Path == cks.UpdateLive {
		none = "no abort (not a material edit: the running executor keeps going)"
	}
	printAbortOutcome(x.w, line, res.Abort, none)
	for _, ch := range res.Children {
		fmt.Fprintf(x.w, "  child task %d created: %s %s %q\n", ch.ID, ch.State, ch.Type, ch.Title)
	}
	return nil
}

func printStopped(x *reply[cks.StopTaskInput, cks.TaskStopResult]) error {
	line := fmt.Sprintf("task %d %s", x.out.Task.ID, x.out.Task.State)
	if x.out.From != "" {
		line += " (was " + string(x.out.From) + ")"
	}
	printAbortOutcome(x.w, line, x.out.Abort, "no executor held it")
	return nil
}

// printRestarted prints "task ID VERB: STATE (restart …, attempts …)": the
// line of a start or a retry.
func printRestarted(verb string) func(x *reply[cks.TaskReasonInput, cks.Task]) error {
	return func(x *reply[cks.TaskReasonInput, cks.Task]) error {
		t := x.out
		_, err := fmt.Fprintf(x.w, "task %d %s: %s (restart %d, attempts %d of %d, revision %d)\n",
			t.ID, verb, t.State, t.Restarts, t.Attempts, t.MaxAttempts, t.Revision)
		return err
	}
}

// printClaimed prints each claimed task a line with its lease token: the
// one answer that shows it, so the line is all a script needs to go on.
func printClaimed(x *reply[cks.ClaimTasksInput, cks.ClaimedTasks]) error {
	if len(x.out.Tasks) == 0 {
		_, err := fmt.Fprintln(x.w, "no task claimed (no OPEN task to lease)")
		return err
	}
	for _, t := range x.out.Tasks {
		if _, err := fmt.Fprintf(x.w, "task %d claimed: %s %s %q (attempt %d, revision %d), lease token %s until %s\n",
			t.ID, t.State, t.Type, t.Title, t.Attempts, t.Revision, t.LeaseToken, t.LeaseExpiresAt.Format(time.RFC3339)); err != nil {
			return err
		}
	}
	return nil
}

// printVerb prints "task ID VERB: STATE".
func printVerb[In any](verb string) func(x *reply[In, cks.Task]) error {
	return func(x *reply[In, cks.Task]) error {
		_, err := fmt.Fprintf(x.w, "task %d %s: %s\n", x.out.ID, verb, x.out.State)
		return err
	}
}

func printTasks(w io.Writer, page cks.TaskPage) {
	if len(page.Tasks) == 0 {
		fmt.Fprintln(w, "no tasks")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tTYPE\tPRIO\tATTEMPTS\tCLAIMED BY\tTITLE")
	for _, t := range page.Tasks {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d/%d\t%s\t%s\n", t.ID, t.State, t.Type, t.Priority,
			t.Attempts, t.MaxAttempts, or(t.ClaimedBy, "-"), t.Title)
	}
	tw.Flush()
	if page.Next != 0 {
		fmt.Fprintln(w, moreHint(page))
	}
}

// errAbortUnconfirmed marks a stop or update whose executor did not confirm
// its abort before the deadline: the task is held (or restarted) as asked,
// but a process may still be running against it, so the command exits 3.
var errAbortUnconfirmed = errors.New("abort unconfirmed")

// unconfirmed returns errAbortUnconfirmed, naming the executor, when ab is
// an abort whose deadline passed without a confirmation.
func unconfirmed(id int64, ab *cks.Abort) error {
	if ab == nil || ab.Outcome != cks.AbortUnconfirmed {
		return nil
	}
	return fmt.Errorf("%w: executor %s may still be running against task %d (it did not confirm within %s)",
		errAbortUnconfirmed, ab.Executor, id, abortDeadline(ab))
}

func abortDeadline(ab *cks.Abort) time.Duration {
	return ab.DeadlineAt.Sub(ab.RequestedAt).Round(time.Millisecond)
}

// abortText says what became of an abort request in one line.
func abortText(ab *cks.Abort) string {
	switch ab.Outcome {
	case cks.AbortConfirmed:
		return "abort confirmed by " + ab.Executor
	case cks.AbortUnconfirmed:
		return fmt.Sprintf("abort UNCONFIRMED after %s: executor %s may still be running", abortDeadline(ab), ab.Executor)
	case cks.AbortPending:
		return fmt.Sprintf("abort requested from %s, not confirmed yet (not waited for; deadline %s)", ab.Executor, abortDeadline(ab))
	}
	return fmt.Sprintf("abort %s (executor %s)", ab.Outcome, ab.Executor)
}

// printAbortOutcome prints line with the abort outcome: on the same line
// when it is settled, on a line of its own when it is unconfirmed so that
// it cannot be missed.
func printAbortOutcome(w io.Writer, line string, ab *cks.Abort, none string) {
	switch {
	case ab == nil:
		fmt.Fprintf(w, "%s; %s\n", line, none)
	case ab.Outcome == cks.AbortUnconfirmed:
		fmt.Fprintf(w, "%s\n%s\n", line, abortText(ab))
	default:
		fmt.Fprintf(w, "%s; %s\n", line, abortText(ab))
	}
}

// printListing prints a page of `task list`; a page in order stopped_first
// (without --state) opens with its STOPPED tasks, prominently, with how
// long they have been held and any abort they left unconfirmed.
func printListing(w io.Writer, p cks.TaskPage, now time.Time) {
	stopped := 0
	if p.Stopped != nil {
		stopped = *p.Stopped
	}
	if stopped > 0 {
		fmt.Fprintf(w, "!! STOPPED: %d task(s) held by an operator; nothing runs them until `cks task start ID`\n", stopped)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tSTOPPED FOR\tTYPE\tPRIO\tATTEMPTS\tABORT\tTITLE")
		for _, t := range p.Tasks[:stopped] {
			abort := "-"
			if a := t.LastAbort; a != nil && (a.Outcome == cks.AbortUnconfirmed || a.Outcome == cks.AbortPending) {
				abort = fmt.Sprintf("%s (executor %s)", a.Outcome, a.Executor)
				if a.Outcome == cks.AbortUnconfirmed {
					abort = fmt.Sprintf("UNCONFIRMED: %s may still be running", a.Executor)
				}
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\n", t.ID, t.State, heldFor(now.Sub(t.StateChangedAt)), t.Type,
				t.Priority, t.Attempts, t.MaxAttempts, abort, t.Title)
		}
		tw.Flush()
		if p.MoreStopped {
			fmt.Fprintln(w, "more STOPPED tasks: cks task list --state STOPPED")
		}
		if len(p.Tasks) == stopped {
			if p.Next != 0 {
				fmt.Fprintln(w, moreHint(p))
			}
			return
		}
		fmt.Fprintln(w)
	}
	printTasks(w, cks.TaskPage{Tasks: p.Tasks[stopped:], Next: p.Next, NextKey: p.NextKey})
}

// heldFor formats how long a task has been stopped: 45s, 12m, 5h12m, 3d4h
// (finer than age, which the process list uses).
func heldFor(d time.Duration) string {
	switch {
	case d < time.Hour:
		return age(max(d, 0))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// printTask prints `task show`: the task's fields, its attempts, aborts and
// events.
func printTask(w io.Writer, t cks.Task) {
	printTaskFields(w, t)
	printTaskAttempts(w, t)
	printTaskLog(w, t)
}

// printTaskFields prints the task's fields that are set, one per line.
func printTaskFields(w io.Writer, t cks.Task) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("task", strconv.FormatInt(t.ID, 10))
	state := string(t.State)
	if t.State == cks.TaskStopped {
		state += " (held by an operator since " + t.StateChangedAt.Format(time.RFC3339) + ", " + heldFor(time.Since(t.StateChangedAt)) + " ago)"
	}
	row("state", state)
	row("type", t.Type)
	row("title", t.Title)
	row("description", t.Description)
	row("criteria", t.AcceptanceCriteria)
	row("payload", string(t.Payload))
	row("priority", strconv.Itoa(t.Priority))
	row("attempts", fmt.Sprintf("%d of %d (restarts %d, revision %d)", t.Attempts, t.MaxAttempts, t.Restarts, t.Revision))
	if m := strings.TrimSpace(string(t.Metadata)); m != "" && m != "{}" {
		row("metadata", m)
	}
	if len(t.DependsOn) > 0 {
		row("depends on", fmt.Sprint(t.DependsOn))
	}
	if t.ParentID != nil {
		row("parent", strconv.FormatInt(*t.ParentID, 10))
	}
	row("dedupe key", t.DedupeKey)
	row("claimed by", t.ClaimedBy)
	if !t.LeaseExpiresAt.IsZero() {
		row("lease until", t.LeaseExpiresAt.Format(time.RFC3339))
	}
	if !t.RunAfter.IsZero() {
		row("run after", t.RunAfter.Format(time.RFC3339))
	}
	if len(t.ConcurrencyKeys) > 0 {
		row("keys", strings.Join(t.ConcurrencyKeys, ", "))
	}
	if t.Traceparent != "" {
		row("traceparent", t.Traceparent)
	}
	if t.AttemptTimeout != "" {
		timeout := string(t.AttemptTimeout) + " an attempt"
		if !t.AttemptDeadline.IsZero() {
			timeout += ", this one ends at " + t.AttemptDeadline.Format(time.RFC3339)
		}
		row("timeout", timeout)
	}
	row("question", t.Question)
	row("answer", t.Answer)
	row("review", t.ReviewNote)
	row("result", t.Result)
	row("last error", t.LastError)
	if a := t.LastAbort; a != nil && a.Outcome != cks.AbortConfirmed {
		row("last abort", abortText(a))
	}
	tw.Flush()
}

// printTaskAttempts prints the current attempt apart from the earlier ones.
func printTaskAttempts(w io.Writer, t cks.Task) {
	if cur := t.Current; cur != nil {
		fmt.Fprintf(w, "\ncurrent attempt (attempt %d, restart %d; task revision %d):\n", cur.Attempt, cur.Restart, t.Revision)
		if cur.Workspace == "" && len(cur.Evidence) == 0 && len(cur.Decisions) == 0 {
			fmt.Fprintln(w, "  nothing recorded yet")
		}
		printAttempt(w, cur, t.Revision)
	}
	if len(t.History) > 0 {
		fmt.Fprintln(w, "\nhistory (earlier attempts; nothing here counts for the current one):")
		for i := range t.History {
			h := &t.History[i]
			mark := ""
			if h.Aborted {
				mark = " — ABORTED"
			}
			fmt.Fprintf(w, "  attempt %d, restart %d%s\n", h.Attempt, h.Restart, mark)
			printAttempt(w, h, t.Revision)
		}
	}
}

// printTaskLog prints the task's aborts and events.
func printTaskLog(w io.Writer, t cks.Task) {
	if len(t.Aborts) > 0 {
		fmt.Fprintln(w, "\naborts:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, a := range t.Aborts {
			fmt.Fprintf(tw, "  %s\t%s\tby %s\texecutor %s\tattempt %d, restart %d\t%s\t%s\n", a.RequestedAt.Format(time.RFC3339),
				strings.ToUpper(strings.TrimPrefix(string(a.Outcome), "abort_")), or(a.RequestedBy, "-"), a.Executor,
				a.Attempt, a.Restart, a.Reason, abortText(&a))
		}
		tw.Flush()
	}
	if len(t.Events) > 0 {
		fmt.Fprintln(w, "\nevents:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, ev := range t.Events {
			fmt.Fprintf(tw, "  %s\t%s\t%s → %s\tattempt %d\t%s\n", ev.At.Format(time.RFC3339), ev.Actor,
				or(string(ev.From), "∅"), ev.To, ev.Attempt, ev.Reason)
		}
		tw.Flush()
	}
	printEdits(w, t.Events)
}

// shownChange is how much of a value `task show` prints (--json has all).
const shownChange = 200

// printEdits prints what each edit of the task changed: every field with
// its old and new value (long ones cut; --json has them whole).
func printEdits(w io.Writer, events []cks.TaskEvent) {
	head := false
	for _, ev := range events {
		if len(ev.Changes) == 0 {
			continue
		}
		if !head {
			fmt.Fprintln(w, "\nedits:")
			head = true
		}
		fmt.Fprintf(w, "  %s by %s (%s):\n", ev.At.Format(time.RFC3339), ev.Actor, ev.Reason)
		for _, c := range ev.Changes {
			switch {
			case len(c.Old) == 0 && c.OldCut == 0:
				fmt.Fprintf(w, "    %s: %s\n", c.Field, changeValue(c.New))
			default:
				old := changeValue(c.Old)
				if c.OldCut > 0 {
					old = strings.TrimSpace(old + fmt.Sprintf(" (%d bytes not kept)", c.OldCut))
				}
				fmt.Fprintf(w, "    %s: %s → %s\n", c.Field, old, changeValue(c.New))
			}
		}
	}
}

// changeValue is a value of a change as `task show` prints it: a text
// quoted, other JSON as it is, either cut to shownChange bytes.
func changeValue(v json.RawMessage) string {
	var text string
	out := string(v)
	if json.Unmarshal(v, &text) == nil {
		out = strconv.Quote(text)
	}
	if len(out) > shownChange {
		out = fmt.Sprintf("%s… (%d bytes)", strings.ToValidUTF8(out[:shownChange], ""), len(v))
	}
	return out
}

// printAttempt prints what one attempt recorded, indented.
func printAttempt(w io.Writer, v *cks.AttemptView, revision int) {
	if v.Workspace != "" {
		fmt.Fprintf(w, "    workspace: %s\n", v.Workspace)
	}
	if len(v.Evidence) > 0 {
		fmt.Fprintln(w, "    evidence:")
		for _, ev := range v.Evidence {
			fmt.Fprintf(w, "      [%s] %s (revision %d)\n", ev.Kind, ev.Body, ev.Revision)
		}
	}
	if len(v.Decisions) > 0 {
		fmt.Fprintln(w, "    decisions:")
		for _, d := range v.Decisions {
			stale := ""
			if d.DerivedFromRevision < revision {
				stale = fmt.Sprintf(", task is now at revision %d", revision)
			}
			fmt.Fprintf(w, "      [%s] %s (derived from revision %d%s; by %s)\n", d.Kind, d.Text, d.DerivedFromRevision, stale, d.Actor)
		}
	}
}

// printTaskStats prints task_stats one minute (or step) a line, the
// queue's busiest states as columns.
func printTaskStats(w io.Writer, st cks.TaskStats) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head, at := "MINUTE", "15:04"
	if st.StepMinutes > 1 {
		head, at = fmt.Sprintf("%d MINUTES FROM", st.StepMinutes), "01-02 15:04"
	}
	fmt.Fprintln(tw, head+"\tCOMPLETED\tFAILED\tCLAIMS\tP50\tP95\tOPEN\tCLAIMED\tRUNNING\tSTOPPED\tNEEDS_INPUT")
	ms := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return (time.Duration(*p * float64(time.Millisecond))).Round(time.Millisecond).String()
	}
	for _, m := range st.Minutes {
		d := m.Depth
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n", m.At.Local().Format(at), m.Completed, m.Failed,
			m.Claims, ms(m.ClaimLatencyP50MS), ms(m.ClaimLatencyP95MS), d[cks.TaskOpen], d[cks.TaskClaimed], d[cks.TaskRunning],
			d[cks.TaskStopped], d[cks.TaskNeedsInput])
	}
	tw.Flush()
	if st.ClaimsSampled {
		fmt.Fprintf(w, "(latencies of the newest %d claims)\n", cks.MaxStatsClaims)
	}
}

// moreHint says how to list the page after p: its cursor, and its key
// under a sort by one.
func moreHint(p cks.TaskPage) string {
	if p.NextKey != "" {
		return fmt.Sprintf("more: --cursor %d --cursor-key %s", p.Next, p.NextKey)
	}
	return fmt.Sprintf("more: --cursor %d", p.Next)
}

// printUnclaimed prints list_unclaimed_types a type a line, or that every
// type with due tasks has a worker.
func printUnclaimed(w io.Writer, u cks.UnclaimedTypes, now time.Time) {
	if len(u.Types) == 0 {
		fmt.Fprintf(w, "every task type with tasks due for over %s has a worker\n", age(time.Duration(u.AfterS*float64(time.Second))))
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tWAITING\tFOR")
	for _, t := range u.Types {
		fmt.Fprintf(tw, "%q\t%d\t%s\n", t.Type, t.Waiting, age(now.Sub(t.Since)))
	}
	tw.Flush()
	if u.Total > len(u.Types) {
		fmt.Fprintf(w, "… and %d more types\n", u.Total-len(u.Types))
	}
	fmt.Fprintln(w, "no live worker claims these types: start one (cks agent exec --types TYPE -- COMMAND), or check the type's spelling")
}

// printUnclaimedType warns under an OPEN task whose type no worker claims
// (list_unclaimed_types), which would otherwise wait without a word. It
// says nothing offline, or when the token may not ask.
func printUnclaimedType(ctx context.Context, c *client.Client, w io.Writer, t cks.Task) {
	if c == nil || t.State != cks.TaskOpen {
		return
	}
	u, err := c.UnclaimedTypes(ctx, cks.UnclaimedTypesInput{})
	if err != nil {
		return
	}
	for _, x := range u.Types {
		if x.Type == t.Type {
			fmt.Fprintf(w, "warning: no live worker claims type %q: %d tasks of it waiting, the oldest since %s; start one "+
				"(cks agent exec --types %s -- COMMAND) or check the type's spelling\n", t.Type, x.Waiting,
				x.Since.Local().Format(time.DateTime), t.Type)
		}
	}
}
