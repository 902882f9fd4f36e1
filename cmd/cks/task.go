package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/ledger"
)

const taskSubcommands = "list, show, create, update, stop, start, answer or cancel"

// int64List is a repeatable flag of task ids (also comma-separated).
type int64List []int64

func (l *int64List) String() string { return fmt.Sprint([]int64(*l)) }

func (l *int64List) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil || id <= 0 {
			return fmt.Errorf("expected a task id, got %q", part)
		}
		*l = append(*l, id)
	}
	return nil
}

// jsonFlag reads the value of a JSON flag (--payload, --metadata): empty
// means the flag was not given (nil), anything else must be a JSON value,
// which is sent as written.
func jsonFlag(name, val string) (json.RawMessage, error) {
	if val == "" {
		return nil, nil
	}
	if !json.Valid([]byte(val)) {
		return nil, fmt.Errorf("%w: --%s: expected a JSON value, got %q", errUsage, name, val)
	}
	return json.RawMessage(val), nil
}

// stringList is a repeatable string flag (also comma-separated).
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

func cmdTask(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: task needs a subcommand: %s", errUsage, taskSubcommands)
	}
	sub, args := args[0], args[1:]
	fs := flagSet("task "+sub, e)
	var cf clientFlags
	cf.register(fs)
	switch sub {
	case "list":
		var states, types stringList
		fs.Var(&states, "state", "only tasks in this state (repeatable or comma-separated)")
		fs.Var(&types, "type", "only tasks of this type (repeatable or comma-separated)")
		cursor := fs.Int64("cursor", 0, "list tasks after this task id (the next_cursor of a previous page)")
		limit := fs.Int("limit", 0, "page size (default 100, at most 1000)")
		if err := noArgs(fs, args); err != nil {
			return err
		}
		f := cks.TaskFilter{Types: types, After: *cursor, Limit: *limit}
		for _, s := range states {
			f.States = append(f.States, cks.TaskState(strings.ToUpper(s)))
		}
		c, err := cf.client(e)
		if err != nil {
			return err
		}
		if len(f.States) > 0 {
			page, err := c.ListTasks(ctx, f)
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(e.stdout, page)
			}
			printTasks(e.stdout, page)
			return nil
		}
		l, err := ledger.ListStoppedFirst(ctx, c, ledger.StoppedFirstQuery{Types: f.Types, After: f.After, Limit: f.Limit})
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, l)
		}
		printListing(e.stdout, l, time.Now())
		return nil
	case "show":
		id, err := oneID(fs, args)
		if err != nil {
			return err
		}
		c, err := cf.client(e)
		if err != nil {
			return err
		}
		t, err := c.GetTask(ctx, id)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, t)
		}
		printTask(e.stdout, t)
		return nil
	case "create":
		var n cks.NewTask
		var deps int64List
		var payload string
		var parent int64
		fs.StringVar(&n.Type, "type", "", "task type (required); agents claim by type")
		fs.StringVar(&n.Title, "title", "", "short title")
		fs.StringVar(&n.Description, "description", "", "what to do")
		fs.StringVar(&n.AcceptanceCriteria, "criteria", "", "acceptance criteria")
		fs.StringVar(&payload, "payload", "", "payload, a JSON value")
		fs.IntVar(&n.Priority, "priority", 0, "priority 0..1000, higher first")
		fs.IntVar(&n.MaxAttempts, "max-attempts", 0, "attempts before dead letter (default 3)")
		fs.Var(&deps, "depends-on", "task id this one waits for (repeatable)")
		fs.Int64Var(&parent, "parent", 0, "parent task id")
		fs.StringVar(&n.DedupeKey, "dedupe-key", "", "return the live task with this key instead of creating another")
		if err := noArgs(fs, args); err != nil {
			return err
		}
		p, err := jsonFlag("payload", payload)
		if err != nil {
			return err
		}
		n.Payload = p
		if parent != 0 {
			n.ParentID = &parent
		}
		n.DependsOn = deps
		c, err := cf.client(e)
		if err != nil {
			return err
		}
		t, created, err := c.CreateTask(ctx, n)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, t)
		}
		verb := "created"
		if !created {
			verb = "exists (dedupe key " + t.DedupeKey + ")"
		}
		fmt.Fprintf(e.stdout, "task %d %s: %s\n", t.ID, verb, t.State)
		return nil
	case "answer":
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) != 2 {
			return fmt.Errorf("%w: task answer needs ID and TEXT", errUsage)
		}
		id, err := parseID(pos[0])
		if err != nil {
			return err
		}
		c, err := cf.client(e)
		if err != nil {
			return err
		}
		t, err := c.AnswerTask(ctx, id, pos[1])
		if err != nil {
			return err
		}
		return printResult(e.stdout, cf.json, t, "answered")
	case "cancel":
		reason := fs.String("reason", "", "why, recorded in the task's events")
		id, err := oneID(fs, args)
		if err != nil {
			return err
		}
		c, err := cf.client(e)
		if err != nil {
			return err
		}
		t, err := c.CancelTask(ctx, id, *reason)
		if err != nil {
			return err
		}
		return printResult(e.stdout, cf.json, t, "cancelled")
	case "stop":
		reason := fs.String("reason", "", "why the task is held (required), recorded in its events and abort")
		deadline := fs.Duration("deadline", 0, "how long to wait for a running executor to confirm its abort (default 30s)")
		wait := fs.Bool("wait", true, "wait up to --deadline for the abort confirmation; --wait=false returns at once")
		id, err := oneID(fs, args)
		if err != nil {
			return err
		}
		c, err := cf.client(e)
		if err != nil {
			return err
		}
		res, err := c.StopTask(ctx, id, client.StopRequest{Reason: *reason, Deadline: *deadline, NoWait: !*wait})
		if err != nil {
			return err
		}
		if cf.json {
			if err := printJSON(e.stdout, res); err != nil {
				return err
			}
		} else {
			line := fmt.Sprintf("task %d %s", res.Task.ID, res.Task.State)
			if was := stoppedFrom(ctx, c, res.Task.ID); was != "" {
				line += " (was " + was + ")"
			}
			printAbortOutcome(e.stdout, line, res.Abort, "no executor held it")
		}
		return unconfirmed(res.Task.ID, res.Abort)
	case "start":
		reason := fs.String("reason", "", "why, recorded in the task's events")
		id, err := oneID(fs, args)
		if err != nil {
			return err
		}
		c, err := cf.client(e)
		if err != nil {
			return err
		}
		t, err := c.StartTask(ctx, id, *reason)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, t)
		}
		fmt.Fprintf(e.stdout, "task %d started: %s (restart %d, attempts %d of %d, revision %d)\n",
			t.ID, t.State, t.Restarts, t.Attempts, t.MaxAttempts, t.Revision)
		return nil
	case "update":
		var (
			p                              cks.TaskPatch
			title, description, criteria   string
			payload, metadata              string
			priority                       int
			addDeps, removeDeps, cancelled int64List
			children                       childList
		)
		fs.StringVar(&title, "title", "", "new title (not material: a running task keeps running)")
		fs.StringVar(&description, "description", "", "new description (material)")
		fs.StringVar(&criteria, "criteria", "", "new acceptance criteria (material)")
		fs.StringVar(&payload, "payload", "", "new payload, a JSON value (material)")
		fs.IntVar(&priority, "priority", 0, "new priority 0..1000 (not material)")
		fs.StringVar(&metadata, "metadata", "", "new metadata, a JSON object replacing the old one (not material)")
		fs.Var(&addDeps, "add-dep", "task id to depend on (repeatable or comma-separated; material)")
		fs.Var(&removeDeps, "remove-dep", "dependency to drop (repeatable or comma-separated; material)")
		fs.Var(&children, "add-child", "create a child task TYPE:TITLE (repeatable; material)")
		fs.Var(&cancelled, "cancel-child", "child task id to cancel (repeatable or comma-separated; material)")
		deadline := fs.Duration("deadline", 0, "when a running task is restarted: how long to wait for its executor to confirm the abort (default 30s)")
		wait := fs.Bool("wait", true, "wait up to --deadline for the abort confirmation; --wait=false returns at once")
		id, err := oneID(fs, args)
		if err != nil {
			return err
		}
		fs.Visit(func(fl *flag.Flag) {
			switch fl.Name {
			case "title":
				p.Title = &title
			case "description":
				p.Description = &description
			case "criteria":
				p.AcceptanceCriteria = &criteria
			case "priority":
				p.Priority = &priority
			}
		})
		for _, j := range []struct {
			flag, val string
			dst       *json.RawMessage
		}{{"payload", payload, &p.Payload}, {"metadata", metadata, &p.Metadata}} {
			v, err := jsonFlag(j.flag, j.val)
			if err != nil {
				return err
			}
			*j.dst = v
		}
		p.AddDependsOn, p.RemoveDependsOn, p.CancelChildren, p.AddChildren = addDeps, removeDeps, cancelled, children
		c, err := cf.client(e)
		if err != nil {
			return err
		}
		res, err := c.UpdateTask(ctx, id, client.UpdateRequest{Patch: p, Deadline: *deadline, NoWait: !*wait})
		if err != nil {
			return err
		}
		if cf.json {
			if err := printJSON(e.stdout, res); err != nil {
				return err
			}
		} else {
			line := fmt.Sprintf("task %d updated (%s): path %s, revision %d, now %s", res.Task.ID,
				strings.Join(p.Fields(), ", "), res.Path, res.Task.Revision, res.Task.State)
			none := "no abort (the task was not running)"
			if res.Path == cks.UpdateLive {
				none = "no abort (not a material edit: the running executor keeps going)"
			}
			printAbortOutcome(e.stdout, line, res.Abort, none)
			for _, ch := range res.Children {
				fmt.Fprintf(e.stdout, "  child task %d created: %s %s %q\n", ch.ID, ch.State, ch.Type, ch.Title)
			}
		}
		return unconfirmed(res.Task.ID, res.Abort)
	default:
		return fmt.Errorf("%w: unknown task subcommand %q; expected %s", errUsage, sub, taskSubcommands)
	}
}

// noArgs parses flags and refuses positional arguments.
func noArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: %s takes no arguments, got %q", errUsage, fs.Name(), pos)
	}
	return nil
}

// oneID parses flags and exactly one positional task id.
func oneID(fs *flag.FlagSet, args []string) (int64, error) {
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 1 {
		return 0, fmt.Errorf("%w: %s needs exactly one task ID", errUsage, fs.Name())
	}
	return parseID(pos[0])
}

// parseID reads an ID argument: an integer (whether it names a task is the
// hub's to say).
func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: expected a task ID (an integer), got %q", errUsage, s)
	}
	return id, nil
}

func printResult(w io.Writer, asJSON bool, t cks.Task, verb string) error {
	if asJSON {
		return printJSON(w, t)
	}
	fmt.Fprintf(w, "task %d %s: %s\n", t.ID, verb, t.State)
	return nil
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
		fmt.Fprintf(w, "more: --cursor %d\n", page.Next)
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

// stoppedFrom returns the state task id was stopped from, read from its
// latest STOPPED event; empty when that cannot be read.
func stoppedFrom(ctx context.Context, c *client.Client, id int64) string {
	t, err := c.GetTask(ctx, id)
	if err != nil {
		return ""
	}
	for i := len(t.Events) - 1; i >= 0; i-- {
		if t.Events[i].To == cks.TaskStopped {
			return string(t.Events[i].From)
		}
	}
	return ""
}

// printListing prints `task list` without --state: the STOPPED tasks first,
// prominently, with how long they have been held (ledger.ListStoppedFirst).
func printListing(w io.Writer, l ledger.StoppedFirst, now time.Time) {
	if l.Stopped > 0 {
		fmt.Fprintf(w, "!! STOPPED: %d task(s) held by an operator; nothing runs them until `cks task start ID`\n", l.Stopped)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tSTOPPED FOR\tTYPE\tPRIO\tATTEMPTS\tABORT\tTITLE")
		for _, t := range l.Tasks[:l.Stopped] {
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
		if len(l.Tasks) == l.Stopped {
			if l.Next != 0 {
				fmt.Fprintf(w, "more: --cursor %d\n", l.Next)
			}
			return
		}
		fmt.Fprintln(w)
	}
	printTasks(w, cks.TaskPage{Tasks: l.Tasks[l.Stopped:], Next: l.Next})
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

func printTask(w io.Writer, t cks.Task) {
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
	row("question", t.Question)
	row("answer", t.Answer)
	row("review", t.ReviewNote)
	row("result", t.Result)
	row("last error", t.LastError)
	if a := t.LastAbort; a != nil && a.Outcome != cks.AbortConfirmed {
		row("last abort", abortText(a))
	}
	tw.Flush()
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
	if len(t.Aborts) > 0 {
		fmt.Fprintln(w, "\naborts:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, a := range t.Aborts {
			fmt.Fprintf(tw, "  %s\t%s\tby %s\texecutor %s\tattempt %d, restart %d\t%s\t%s\n", a.RequestedAt.Format(time.RFC3339),
				strings.ToUpper(strings.TrimPrefix(string(a.Outcome), "abort_")), or(a.RequestedBy, "-"), a.Executor,
				a.Attempt, a.Restart, a.Reason, abortText(&a))
		}
		tw.Flush()
	}
	if len(t.Events) > 0 {
		fmt.Fprintln(w, "\nevents:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, ev := range t.Events {
			fmt.Fprintf(tw, "  %s\t%s\t%s → %s\tattempt %d\t%s\n", ev.At.Format(time.RFC3339), ev.Actor,
				or(string(ev.From), "∅"), ev.To, ev.Attempt, ev.Reason)
		}
		tw.Flush()
	}
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
