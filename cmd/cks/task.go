package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks/store"
)

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

func cmdTask(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: task needs a subcommand: list, show, create, answer or cancel", errUsage)
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
		f := store.TaskFilter{Types: types, After: *cursor, Limit: *limit}
		for _, s := range states {
			f.States = append(f.States, store.TaskState(strings.ToUpper(s)))
		}
		c, err := cf.client(e)
		if err != nil {
			return err
		}
		page, err := c.ListTasks(ctx, f)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, page)
		}
		printTasks(e.stdout, page)
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
		var n store.NewTask
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
		if payload != "" {
			if !json.Valid([]byte(payload)) {
				return fmt.Errorf("%w: --payload: expected a JSON value, got %q", errUsage, payload)
			}
			n.Payload = json.RawMessage(payload)
		}
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
	default:
		return fmt.Errorf("%w: unknown task subcommand %q; expected list, show, create, answer or cancel", errUsage, sub)
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

func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%w: expected a task ID (a positive integer), got %q", errUsage, s)
	}
	return id, nil
}

func printResult(w io.Writer, asJSON bool, t store.Task, verb string) error {
	if asJSON {
		return printJSON(w, t)
	}
	fmt.Fprintf(w, "task %d %s: %s\n", t.ID, verb, t.State)
	return nil
}

func printTasks(w io.Writer, page store.TaskPage) {
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

func printTask(w io.Writer, t store.Task) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("task", strconv.FormatInt(t.ID, 10))
	row("state", string(t.State))
	row("type", t.Type)
	row("title", t.Title)
	row("description", t.Description)
	row("criteria", t.AcceptanceCriteria)
	row("payload", string(t.Payload))
	row("priority", strconv.Itoa(t.Priority))
	row("attempts", fmt.Sprintf("%d of %d (restarts %d, revision %d)", t.Attempts, t.MaxAttempts, t.Restarts, t.Revision))
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
	tw.Flush()
	if cur := t.CurrentEvidence(); len(cur) > 0 {
		fmt.Fprintf(w, "\nevidence (attempt %d):\n", t.Attempts)
		for _, ev := range cur {
			fmt.Fprintf(w, "  [%s] %s\n", ev.Kind, ev.Body)
		}
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
