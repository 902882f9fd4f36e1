package studio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// The task board's routes.
const (
	// TasksPath is the task board; ?state=STATE lists one state, and
	// &after=ID pages on by task id.
	TasksPath = "/tasks"
)

// BoardCap is the most rows one list of the task board shows; a note and a
// link to the next page say when there are more.
const BoardCap = 200

// liveStates are the states of the board's "other live work" list: the
// ledger's live states that ask nothing of an operator (STOPPED and
// NEEDS_INPUT have lists of their own).
var liveStates = ledger.Active()

// taskRow is one task of a board list, formatted for display.
type taskRow struct {
	ID          int64
	State       string
	StateClass  string // lower-case state for the CSS class: "needs_input"
	Type        string
	Title       string
	Priority    int
	Attempts    int
	MaxAttempts int
	Restarts    int
	ClaimedBy   string
	Age         string // since creation: "3h ago"
	CreatedAt   string // RFC 3339
	InState     string // since the last state change: "2d ago"
	ChangedAt   string // RFC 3339
	Question    string
	changed     time.Time
	// StaleStop marks a task STOPPED for longer than the stale-stop
	// threshold (Options.StaleStopAfter), StaleAfter ("24 h").
	StaleStop  bool
	StaleAfter string
	// StoppedFor is how long a STOPPED task has been held ("1d 1h"); "" for
	// any other state.
	StoppedFor string
	// Abort flags the task's last abort request while its outcome says the
	// old executor may still be working; nil otherwise.
	Abort *abortFlag
	// StoppedBy and StopReason say who stopped a STOPPED task and why
	// (list_tasks' stop); empty otherwise.
	StoppedBy, StopReason string
}

// abortFlag is the badge of an abort request that is not confirmed.
type abortFlag struct {
	// Class is "unconfirmed" or "pending", for the CSS class.
	Class    string
	Outcome  string
	Executor string
	// Text says what the badge means, naming the executor.
	Text string
	// Deadline is the abort's deadline_at (RFC 3339).
	Deadline string
}

// flagAbort returns the badge of a, nil when a is nil or confirmed.
func flagAbort(a *cks.Abort) *abortFlag {
	if a == nil {
		return nil
	}
	who := a.Executor
	if who == "" {
		who = "the executor"
	}
	f := &abortFlag{Outcome: string(a.Outcome), Executor: a.Executor, Deadline: stamp(a.DeadlineAt)}
	switch a.Outcome {
	case cks.AbortUnconfirmed:
		f.Class = "unconfirmed"
		f.Text = "abort unconfirmed: " + who + " may still be running"
	case cks.AbortPending:
		f.Class = "pending"
		f.Text = "abort pending: waiting for " + who + " to confirm"
	default:
		return nil
	}
	return f
}

// chip is one state with its task count, linking to the state's list.
type chip struct {
	State  string
	Class  string
	Count  int
	Active bool
}

// taskList is one list of the board.
type taskList struct {
	Rows []taskRow
	// Count is how many tasks the list's states hold in all.
	Count int
	// Next is the cursor of the following page, 0 when this page is the last.
	Next    int64
	NextKey string
	// Select puts a checkbox on each row, for the bulk actions.
	Select bool
	// MoreURL lists the rest (the next page, or the state's own list).
	MoreURL string
}

// Shown is len(Rows), for the template.
func (l taskList) Shown() int { return len(l.Rows) }

// boardView is the data of the task board.
type boardView struct {
	Cap   int
	Total int
	Chips []chip
	// Filter says what a filtered board lists ("STOPPED, OPEN · type build");
	// "" shows the default sections.
	Filter string
	// The filter's fields, for the filter form.
	States            []string
	Types             string
	StoppedLongerThan string
	Q, CreatedBy      string
	UnconfirmedAbort  bool
	Sort              string
	// Sorts are the sort selector's choices.
	Sorts []sortChoice
	// AllStates are the ledger's states, for the filter form's choices.
	AllStates []stateChoice
	// Query is the board's query ("state=OPEN&type=build"), the fragment's
	// URL keeps it; Base is it without the cursor.
	Query, Base string
	// Match is the query of the filters a state chip keeps (q,
	// created_by, unconfirmed_abort, sort), "" for none.
	Match template.URL
	// After is the cursor the filtered list started after (0: from the start).
	After int64
	// The default board's sections.
	Stopped      taskList
	StaleStopped int    // STOPPED for longer than the stale-stop threshold
	StaleAfter   string // that threshold, "24 h"
	// UnsureStopped counts the listed STOPPED tasks whose last abort is
	// unconfirmed or pending: a process may still be working on them.
	UnsureStopped int
	Inbox         taskList
	Live          taskList
	Finished      []chip
	FinishedAll   int
	// Filtered is the list of a filtered board.
	Filtered taskList
	// CanCreate offers the New task link: the viewer holds create_task's
	// permission.
	CanCreate bool
	// Bulk are the bulk actions of a filtered board, BulkFilter its filter
	// as the bulk operations take it (JSON).
	Bulk       []bulkAction
	BulkFilter string
	// Unclaimed are the task types no worker claims (list_unclaimed_types),
	// shown above the board while there are any.
	Unclaimed unclaimedView
	// Paused are the task types paused fleet-wide (list_paused_types),
	// shown above the board while there are any.
	Paused []pausedType
}

// pausedType is one paused type of the board.
type pausedType struct {
	Type, By, Reason string
	Since            timeField
}

// pausedTypes is the studio's one read of the paused task types
// (list_paused_types, by type), formatted at now: the board's notice, the
// process cards' marks and the Flow control page show them. A refusal
// (auth.ErrForbidden) or a failure of the read is returned; the board and
// the panel then show none.
func (s *server) pausedTypes(ctx context.Context, now time.Time) ([]pausedType, error) {
	l, err := ops.ListPausedTypes.Do(ctx, s.ops, &struct{}{})
	if err != nil {
		return nil, err
	}
	out := make([]pausedType, len(l.Types))
	for i, t := range l.Types {
		out[i] = pausedType{Type: t.Type, By: t.PausedBy, Reason: t.Reason, Since: at(now, t.PausedAt)}
	}
	return out, nil
}

// unclaimedView is list_unclaimed_types for the board.
type unclaimedView struct {
	Total int
	Types []unclaimedType
}

// unclaimedType is one type of unclaimedView.
type unclaimedType struct {
	Type    string
	Waiting int
	Since   timeField
}

// unclaimed reads the task types no worker claims for the board; the
// board shows none when they cannot be read (a viewer the board admits
// may read them: both need read on /tasks).
func (s *server) unclaimed(ctx context.Context, now time.Time) unclaimedView {
	var v unclaimedView
	if s.ops.Liveness == nil {
		return v
	}
	u, err := ops.UnclaimedTypes(ctx, s.ops, 0)
	if err != nil {
		return v
	}
	v.Total = u.Total
	for _, t := range u.Types {
		v.Types = append(v.Types, unclaimedType{Type: t.Type, Waiting: t.Waiting, Since: at(now, t.Since)})
	}
	return v
}

// sortChoice is one choice of the board's sort selector.
type sortChoice struct {
	Value, Label string
	Selected     bool
}

// boardSorts are the board's sorts, the default (newest first) first.
var boardSorts = []sortChoice{
	{Value: string(cks.TaskSortIDDesc), Label: "Newest first"},
	{Value: string(cks.TaskSortID), Label: "Oldest first"},
	{Value: string(cks.TaskSortUpdatedDesc), Label: "Recently changed"},
	{Value: string(cks.TaskSortUpdated), Label: "Least recently changed"},
	{Value: string(cks.TaskSortPriority), Label: "Priority"},
}

// bulkAction is one verb of the board's bulk form; Refused, when set, is
// why the viewer may not use it (the option is disabled and says so).
type bulkAction struct {
	Verb, Label, Refused string
}

// bulkOps are the bulk operations of the board's form, in its order.
var bulkOps = []struct {
	verb, label string
	op          ops.Operation
	in          any
}{
	{"stop", "Stop", ops.BulkStopTasks, &cks.BulkStopTasksInput{}},
	{"start", "Start", ops.BulkStartTasks, &cks.BulkTasksInput{}},
	{"cancel", "Cancel", ops.BulkCancelTasks, &cks.BulkTasksInput{}},
	{"retry", "Retry", ops.BulkRetryTasks, &cks.BulkTasksInput{}},
}

// stateChoice is one state of the filter form.
type stateChoice struct {
	State   string
	Checked bool
}

// boardParams are the query parameters the board reads; any other is
// refused, never ignored.
var boardParams = []string{"state", "type", "stopped_longer_than", "q", "created_by", "unconfirmed_abort", "sort", "after", "key"}

// badRequest is a query the board refuses; its message is shown as is.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func (s *server) taskBoard(w http.ResponseWriter, r *http.Request) {
	s.boardResponse(w, r, false)
}

// boardFragment serves the board's lists alone, for the page script to swap
// in when the hub's events say a task changed.
func (s *server) boardFragment(w http.ResponseWriter, r *http.Request) {
	s.boardResponse(w, r, true)
}

func (s *server) boardResponse(w http.ResponseWriter, r *http.Request, fragment bool) {
	v, err := s.board(r)
	var bad *badRequest
	var fe *cks.FieldError
	status, heading, msg := http.StatusOK, "", ""
	switch {
	case s.forbidden(w, r, err):
		return
	case errors.As(err, &bad):
		status, heading, msg = http.StatusBadRequest, "Bad task filter", bad.msg
	case errors.As(err, &fe):
		status, heading, msg = http.StatusBadRequest, "Bad task filter", err.Error()
	case err != nil:
		s.logErr(r, "studio: task board", err)
		status, heading, msg = http.StatusInternalServerError, "Could not load tasks",
			"The task list could not be read from the store. The error was logged on the server; reload to try again."
	}
	if fragment {
		w.Header().Set("X-Studio-Fragment", "tasks")
		if status != http.StatusOK {
			s.render(w, r, status, pages["error"], "message", errorView{Heading: heading, Message: msg})
			return
		}
		s.render(w, r, status, pages["tasks"], "board", v)
		return
	}
	if status != http.StatusOK {
		s.errorPage(w, r, status, heading, msg)
		return
	}
	l := s.page("Tasks", "tasks", true, v)
	l.Skip = &skipLink{Target: "task-lists", Label: "Skip to the task list"} // past the filters and chips
	s.render(w, r, http.StatusOK, pages["tasks"], "layout", l)
}

// listTasks lists tasks through the list_tasks operation, with its
// permission check (ledger.TaskLister).
type listTasks struct{ s *ops.Services }

func (l listTasks) ListTasks(ctx context.Context, f cks.TaskFilter) (cks.TaskPage, error) {
	in := ops.ListTasksInputOf(f)
	return ops.ListTasks.Do(ctx, l.s, &in)
}

// names splits a query's values of key: each may be a comma-separated list
// (?state=OPEN,STOPPED&state=RUNNING).
func names(q url.Values, key string) []string {
	var out []string
	for _, v := range q[key] {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// board reads the task board. ?state= (one or several, comma-separated),
// ?type= and ?stopped_longer_than= filter it through list_tasks, from
// ?after=ID on; without a filter it shows the default sections. A filter
// the list_tasks operation refuses is its FieldError, shown as it says; a
// query parameter the board does not read is refused by name.
func (s *server) board(r *http.Request) (boardView, error) {
	q := r.URL.Query()
	v := boardView{Cap: BoardCap, StaleAfter: staleText(s.staleStop)}
	var unknown []string
	for k := range q {
		if !slices.Contains(boardParams, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return v, &badRequest{fmt.Sprintf("The board has no filter %s: it filters by %s.",
			strings.Join(unknown, ", "), strings.Join(boardParams[:7], ", ")+" and pages with after and key")}
	}
	if a := q.Get("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 0 {
			return v, &badRequest{fmt.Sprintf("after=%q is not a task id: expected a non-negative integer.", a)}
		}
		v.After = n
	}
	ctx := r.Context()
	now := s.clock.Now()
	in := cks.ListTasksInput{State: names(q, "state"), Type: names(q, "type"),
		StoppedLongerThan: cks.Duration(strings.TrimSpace(q.Get("stopped_longer_than"))), Cursor: v.After, Limit: BoardCap,
		TaskMatch: cks.TaskMatch{Q: strings.TrimSpace(q.Get("q")), CreatedBy: strings.TrimSpace(q.Get("created_by"))},
		Sort:      cks.TaskSort(strings.TrimSpace(q.Get("sort"))), CursorKey: q.Get("key")}
	switch a := q.Get("unconfirmed_abort"); a {
	case "", "0", "false":
	case "1", "true", "on":
		in.UnconfirmedAbort = true
	default:
		return v, &badRequest{fmt.Sprintf("unconfirmed_abort=%q: expected 1 (or nothing).", a)}
	}
	if in.Sort == "" {
		in.Sort = cks.TaskSortIDDesc // the board's default: newest first
	}
	// The counts below show what list_tasks would: the caller needs its
	// permission, and a filter it refuses is refused here.
	if err := ops.Authorize(ctx, s.ops, ops.ListTasks, &in); err != nil {
		return v, err
	}
	filter, err := ops.TaskFilterOf(in, now)
	if err != nil {
		return v, err
	}
	base := url.Values{}
	if len(in.State) > 0 {
		for _, st := range filter.States {
			v.States = append(v.States, string(st))
		}
		base.Set("state", strings.Join(v.States, ","))
	}
	if len(in.Type) > 0 {
		v.Types = strings.Join(in.Type, ",")
		base.Set("type", v.Types)
	}
	if in.StoppedLongerThan != "" {
		v.StoppedLongerThan = string(in.StoppedLongerThan)
		base.Set("stopped_longer_than", v.StoppedLongerThan)
	}
	v.Q, v.CreatedBy, v.UnconfirmedAbort, v.Sort = in.Q, in.CreatedBy, in.UnconfirmedAbort, string(in.Sort)
	if in.Q != "" {
		base.Set("q", in.Q)
	}
	if in.CreatedBy != "" {
		base.Set("created_by", in.CreatedBy)
	}
	if in.UnconfirmedAbort {
		base.Set("unconfirmed_abort", "1")
	}
	// The chips keep the text, creator and abort filters (and the sort):
	// a chip narrows the search to one state.
	match := url.Values{}
	for _, k := range []string{"q", "created_by", "unconfirmed_abort"} {
		if base.Has(k) {
			match.Set(k, base.Get(k))
		}
	}
	if in.Sort != cks.TaskSortIDDesc {
		match.Set("sort", v.Sort)
	}
	v.Match = template.URL(match.Encode()) // url.Values.Encode escapes every value
	for _, c := range boardSorts {
		c.Selected = c.Value == v.Sort
		v.Sorts = append(v.Sorts, c)
	}
	// The sort alone does not filter: the default board lists its sections
	// in it.
	filtered := len(base) > 0
	if in.Sort != cks.TaskSortIDDesc {
		base.Set("sort", v.Sort)
	}
	v.Base = base.Encode()
	page := url.Values{}
	maps.Copy(page, base)
	if v.After > 0 {
		page.Set("after", strconv.FormatInt(v.After, 10))
		if in.CursorKey != "" {
			page.Set("key", in.CursorKey)
		}
	}
	v.Query = page.Encode()
	for _, st := range ledger.All {
		v.AllStates = append(v.AllStates, stateChoice{State: string(st), Checked: slices.Contains(v.States, string(st))})
	}
	if filtered {
		var parts []string
		if len(v.States) > 0 {
			parts = append(parts, strings.Join(v.States, ", "))
		}
		if v.Types != "" {
			parts = append(parts, "type "+v.Types)
		}
		if v.StoppedLongerThan != "" {
			parts = append(parts, "STOPPED for at least "+v.StoppedLongerThan)
		}
		if v.Q != "" {
			parts = append(parts, fmt.Sprintf("text %q", v.Q))
		}
		if v.CreatedBy != "" {
			parts = append(parts, "created by "+v.CreatedBy)
		}
		if v.UnconfirmedAbort {
			parts = append(parts, "abort not confirmed")
		}
		v.Filter = strings.Join(parts, " · ")
	}
	lister := listTasks{s.ops}
	v.CanCreate = ops.Authorize(ctx, s.ops, ops.CreateTask, &cks.NewTask{}) == nil
	v.Unclaimed = s.unclaimed(ctx, now)
	v.Paused, _ = s.pausedTypes(ctx, now) // none when the viewer may not read them

	// The chips count the tasks of the type and match filters, per state.
	all, err := ops.CountTasks.Do(ctx, s.ops, &cks.CountTasksInput{Type: in.Type, TaskMatch: in.TaskMatch})
	if err != nil {
		return v, fmt.Errorf("count tasks: %w", err)
	}
	counts := all.Counts
	v.Total = all.Total
	// The chips: STOPPED and NEEDS_INPUT first, then lifecycle order.
	chipOf := func(st cks.TaskState) chip {
		return chip{State: string(st), Class: stateClass(st), Count: counts[st],
			Active: len(v.States) == 1 && v.States[0] == string(st) && v.StoppedLongerThan == ""}
	}
	for _, st := range append([]cks.TaskState{cks.TaskStopped, cks.TaskNeedsInput}, liveStates...) {
		v.Chips = append(v.Chips, chipOf(st))
	}
	for _, st := range ledger.Terminal {
		c := chipOf(st)
		v.Chips = append(v.Chips, c)
		v.Finished = append(v.Finished, c)
		v.FinishedAll += c.Count
	}

	if filtered {
		p, err := ops.ListTasks.Do(ctx, s.ops, &in)
		if err != nil {
			return v, fmt.Errorf("list tasks: %w", err)
		}
		v.Filtered = taskList{Rows: s.rows(p.Tasks, now), Next: p.Next, Select: true}
		n, err := ops.CountTasks.Do(ctx, s.ops, &cks.CountTasksInput{State: in.State, Type: in.Type,
			StoppedLongerThan: in.StoppedLongerThan, TaskMatch: in.TaskMatch})
		if err != nil {
			return v, fmt.Errorf("count filtered tasks: %w", err)
		}
		v.Filtered.Count = n.Total
		if p.Next != 0 {
			more := url.Values{}
			maps.Copy(more, base)
			more.Set("after", strconv.FormatInt(p.Next, 10))
			if p.NextKey != "" {
				more.Set("key", p.NextKey)
			}
			v.Filtered.MoreURL = TasksPath + "?" + more.Encode()
		}
		sel := cks.TaskSelection{State: in.State, Type: in.Type, StoppedLongerThan: in.StoppedLongerThan, TaskMatch: in.TaskMatch}
		js, err := json.Marshal(sel)
		if err != nil {
			return v, err
		}
		v.BulkFilter = string(js)
		for _, b := range bulkOps {
			a := bulkAction{Verb: b.verb, Label: b.label}
			if err := ops.Authorize(ctx, s.ops, b.op, b.in); err != nil {
				a.Refused = err.Error()
			}
			v.Bulk = append(v.Bulk, a)
		}
		return v, nil
	}

	list := func(states []cks.TaskState, after int64) (taskList, error) {
		var l taskList
		for _, st := range states {
			l.Count += counts[st]
		}
		if l.Count == 0 {
			return l, nil
		}
		page, err := lister.ListTasks(ctx, cks.TaskFilter{States: states, After: after, Limit: BoardCap, Sort: in.Sort})
		if err != nil {
			return l, fmt.Errorf("list %v tasks: %w", states, err)
		}
		l.Rows = s.rows(page.Tasks, now)
		l.Next, l.NextKey = page.Next, page.NextKey
		return l, nil
	}

	v.Stopped.Count = counts[cks.TaskStopped]
	if v.Stopped.Count > 0 {
		held, err := ledger.ListStoppedFirst(ctx, lister, ledger.StoppedFirstQuery{Rest: []cks.TaskState{}, MaxStopped: BoardCap})
		if err != nil {
			return v, fmt.Errorf("list STOPPED tasks: %w", err)
		}
		v.Stopped.Rows = s.rows(held.Tasks, now)
		if held.MoreStopped {
			v.Stopped.MoreURL = boardURL(cks.TaskStopped, 0)
		}
		for _, r := range v.Stopped.Rows {
			if r.Abort != nil {
				v.UnsureStopped++
			}
		}
		stale, err := ops.CountTasks.Do(ctx, s.ops, &cks.CountTasksInput{StoppedLongerThan: cks.Duration(s.staleStop.String())})
		if err != nil {
			return v, fmt.Errorf("count long-stopped tasks: %w", err)
		}
		v.StaleStopped = stale.Total
	}
	if v.Inbox, err = list([]cks.TaskState{cks.TaskNeedsInput}, 0); err != nil {
		return v, err
	}
	if v.Live, err = list(liveStates, 0); err != nil {
		return v, err
	}
	// A default section that is cut short links to its state's own list.
	if v.Inbox.Next != 0 {
		v.Inbox.MoreURL = boardURL(cks.TaskNeedsInput, 0)
	}
	if v.Live.Next != 0 {
		more := url.Values{"state": {strings.Join(stateNames(liveStates), ",")}, "after": {strconv.FormatInt(v.Live.Next, 10)}}
		if in.Sort != cks.TaskSortIDDesc {
			more.Set("sort", string(in.Sort))
		}
		if v.Live.NextKey != "" {
			more.Set("key", v.Live.NextKey)
		}
		v.Live.MoreURL = TasksPath + "?" + more.Encode()
	}
	return v, nil
}

func stateNames(sts []cks.TaskState) []string {
	var out []string
	for _, st := range sts {
		out = append(out, string(st))
	}
	return out
}

// rows formats tasks for a board list.
func (s *server) rows(ts []cks.Task, now time.Time) []taskRow {
	var out []taskRow
	for _, t := range ts {
		out = append(out, s.row(t, now))
	}
	return out
}

// boardURL is the board filtered to st, from after on.
func boardURL(st cks.TaskState, after int64) string {
	q := url.Values{"state": {string(st)}}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	return TasksPath + "?" + q.Encode()
}

func stateClass(st cks.TaskState) string { return strings.ToLower(string(st)) }

func (s *server) row(t cks.Task, now time.Time) taskRow {
	r := taskRow{
		ID:          t.ID,
		State:       string(t.State),
		StateClass:  stateClass(t.State),
		Type:        t.Type,
		Title:       t.Title,
		Priority:    t.Priority,
		Attempts:    t.Attempts,
		MaxAttempts: t.MaxAttempts,
		Restarts:    t.Restarts,
		ClaimedBy:   t.ClaimedBy,
		Age:         since(now, t.CreatedAt),
		CreatedAt:   stamp(t.CreatedAt),
		InState:     since(now, t.StateChangedAt),
		ChangedAt:   stamp(t.StateChangedAt),
		Question:    t.Question,
		changed:     t.StateChangedAt,
		StaleStop:   sweeper.IsStaleStop(t, now, s.staleStop),
		StaleAfter:  staleText(s.staleStop),
		Abort:       flagAbort(t.LastAbort),
	}
	if t.State == cks.TaskStopped && !t.StateChangedAt.IsZero() {
		r.StoppedFor = span(now.Sub(t.StateChangedAt))
	}
	if t.Stop != nil {
		// The event's reason is the stop's with the ledger's "stopped: ".
		r.StoppedBy, r.StopReason = t.Stop.Actor, strings.TrimPrefix(t.Stop.Reason, "stopped: ")
	}
	return r
}

// staleText is the stale-stop threshold as the board says it: "24 h",
// "90m".
func staleText(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%d h", d/time.Hour)
	}
	return shortDuration(d)
}

// span is a duration as the board prints how long a task has been held:
// "40s", "12m", "3h 5m", "2d 4h".
func span(d time.Duration) string {
	switch {
	case d < time.Second:
		return "under a second"
	case d < time.Minute:
		return fmt.Sprintf("%ds", d/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d < 24*time.Hour:
		if m := d % time.Hour / time.Minute; m > 0 {
			return fmt.Sprintf("%dh %dm", d/time.Hour, m)
		}
		return fmt.Sprintf("%dh", d/time.Hour)
	default:
		if h := d % (24 * time.Hour) / time.Hour; h > 0 {
			return fmt.Sprintf("%dd %dh", d/(24*time.Hour), h)
		}
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
}

func since(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return humanAge(now.Sub(t).Seconds())
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// newTaskView is the data of the create form: Parent, when set, makes the
// new task its child; the attempt bounds are create_task's.
type newTaskView struct{ Parent int64 }

// MaxAttempts and DefaultAttempts bound and fill the form's max attempts.
func (newTaskView) MaxAttempts() int     { return cks.MaxMaxAttempts }
func (newTaskView) DefaultAttempts() int { return cks.DefaultMaxAttempts }

// newTask renders the create form (?parent=ID for a child task); the
// script posts it to create_task. The caller needs create_task's
// permission to see it.
func (s *server) newTask(w http.ResponseWriter, r *http.Request) {
	var v newTaskView
	q := r.URL.Query()
	for k := range q {
		if k != "parent" {
			s.errorPage(w, r, http.StatusBadRequest, "Bad request", fmt.Sprintf("The new-task form takes only parent, not %s.", k))
			return
		}
	}
	if p := q.Get("parent"); p != "" {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n <= 0 {
			s.errorPage(w, r, http.StatusBadRequest, "Bad request", fmt.Sprintf("parent=%q is not a task id: expected a positive integer.", p))
			return
		}
		v.Parent = n
	}
	if s.forbidden(w, r, ops.Authorize(r.Context(), s.ops, ops.CreateTask, &cks.NewTask{})) {
		return
	}
	s.render(w, r, http.StatusOK, pages["newtask"], "layout", s.page("New task", "tasks", false, v))
}

// taskDetail is the data of a task's page.
type taskDetail struct {
	taskRow
	Description string
	Criteria    string
	Revision    int
	ParentID    int64
	DependsOn   []int64
	DedupeKey   string
	CreatedBy   string
	Times       []timeField
	Payload     string
	Answer      string
	Result      string
	LastError   string
	ReviewNote  string
	// Current is what the current attempt recorded; History the earlier
	// attempts, newest first (aborted ones marked). Nothing of an aborted
	// attempt is ever in Current.
	Current attemptView
	History []attemptView
	// Aborts are the task's abort requests, newest first.
	Aborts []abortView
	Events []eventView
	// Revisions is the edit history of the description and criteria.
	Revisions []revisionView
	// CanStop offers the Stop form, CanStart the Start button, CanCancel
	// the Cancel form, CanAnswer the answer form, CanUpdate the edit form
	// (CanUpdateMaterial: with its material fields): what get_task says
	// the task admits (the ledger's Actions). The API decides whether the
	// viewer may.
	CanStop, CanStart, CanCancel, CanAnswer, CanUpdate, CanUpdateMaterial bool
	// CanReview offers the review form (approve or reject with a note): the
	// task is NEEDS_REVIEW (claim_review admits it).
	CanReview bool
	// CanRetry offers the Retry form: the task (FAILED or CANCELLED) admits
	// retry_task.
	CanRetry bool
	// Leased: CLAIMED or RUNNING, where a material edit stops the attempt,
	// applies and restarts it.
	Leased bool
	// Refused names, per verb the task admits but the viewer may not use
	// ("stop", "start", "retry", "cancel", "answer", "review", "update", "create"), why: the
	// permission the operation needs. The page shows those disabled with it.
	Refused map[string]string
	// Executor is the agent process behind an unconfirmed abort, when its
	// executor is one (agents.ParseExecutorName): the notice offers to stop
	// it (request_process_stop of the instance), so an operator can end what
	// may still be running against the task.
	Executor *executorProcess
	// Edit lists the edit form's fields, each with whether changing it is
	// material (cks.TaskPatch.Material: the executor works from it).
	Edit []editField
	// Moved is the event that moved the task into its state: who did
	// and why, shown under the title (a stop's operator and reason).
	Moved *eventView
	// Spend is what the task's attempts reported spending against its
	// budget (get_task's spend); nil when it has neither.
	Spend *budgetView
	// BudgetStop is the question of a task its budget stopped: NEEDS_INPUT
	// with its spend at a budget (cks.TaskSpend.Over), shown at the top.
	BudgetStop string
}

// budgetView is a task's spend against its budget, with the share of
// each budget used (0 to 100, for its bar).
type budgetView struct {
	cks.TaskSpend
	TokensPercent, CostPercent int
	// Over says which budget the spend has used up ("" when none).
	Over string
}

// budgetOf formats sp; nil for nil.
func budgetOf(sp *cks.TaskSpend) *budgetView {
	if sp == nil {
		return nil
	}
	share := func(used, of float64) int { return int(min(100, max(0, 100*used/of))) }
	v := &budgetView{TaskSpend: *sp, Over: sp.Over()}
	if sp.MaxTokens > 0 {
		v.TokensPercent = share(float64(sp.Tokens), float64(sp.MaxTokens))
	}
	if sp.MaxCost > 0 {
		v.CostPercent = share(float64(sp.Cost), float64(sp.MaxCost))
	}
	return v
}

// executorProcess is the agent process an abort names as its executor.
type executorProcess struct {
	Kind, InstanceID, ShortID string
	// Refused says why the viewer may not ask it to stop (control on
	// /processes/KIND); the button is then disabled with it.
	Refused string
}

// editField is one field of the task page's edit form.
type editField struct {
	Name, Label, Value string
	Multiline          bool
	Material           bool
	Number             bool
	// IDs: a list of task ids, written comma-separated (sent as a list).
	IDs bool
	// JSON: a JSON value (the payload, the metadata object), sent parsed.
	JSON bool
}

// editFields are the edit form's fields of t; whether each is material is
// asked of cks.TaskPatch.Material, the one rule update_task follows.
func editFields(t cks.Task) []editField {
	text := func(v string) *string { return &v }
	prio := t.Priority
	return []editField{
		{Name: "title", Label: "Title", Value: t.Title, Material: cks.TaskPatch{Title: text(t.Title)}.Material()},
		{Name: "priority", Label: "Priority", Value: strconv.Itoa(t.Priority), Number: true, Material: cks.TaskPatch{Priority: &prio}.Material()},
		{Name: "description", Label: "Description", Value: t.Description, Multiline: true, Material: cks.TaskPatch{Description: text(t.Description)}.Material()},
		{Name: "acceptance_criteria", Label: "Acceptance criteria", Value: t.AcceptanceCriteria, Multiline: true,
			Material: cks.TaskPatch{AcceptanceCriteria: text(t.AcceptanceCriteria)}.Material()},
		{Name: "payload", Label: "Payload (JSON)", Value: prettyJSON(t.Payload), Multiline: true, JSON: true,
			Material: cks.TaskPatch{Payload: t.Payload}.Material()},
		{Name: "metadata", Label: "Metadata (a JSON object)", Value: prettyJSON(t.Metadata), Multiline: true, JSON: true,
			Material: cks.TaskPatch{Metadata: json.RawMessage(`{}`)}.Material()},
		{Name: "max_tokens", Label: "Budget: max tokens (0: none)", Value: budgetText(t.Spend, false), Number: true,
			Material: cks.TaskPatch{MaxTokens: new(int64(0))}.Material()},
		{Name: "max_cost", Label: "Budget: max cost in USD (0: none)", Value: budgetText(t.Spend, true),
			Material: cks.TaskPatch{MaxCost: new("0")}.Material()},
		{Name: "add_depends_on", Label: "Add dependencies (task ids)", IDs: true, Material: cks.TaskPatch{AddDependsOn: []int64{t.ID}}.Material()},
		{Name: "remove_depends_on", Label: "Remove dependencies (task ids)", IDs: true, Material: cks.TaskPatch{RemoveDependsOn: []int64{t.ID}}.Material()},
		{Name: "cancel_children", Label: "Cancel children (task ids)", IDs: true, Material: cks.TaskPatch{CancelChildren: []int64{t.ID}}.Material()},
	}
}

// budgetText is the edit form's value of a budget of sp: max_cost's
// decimal (cost) or max_tokens, "" when none is set.
func budgetText(sp *cks.TaskSpend, cost bool) string {
	switch {
	case sp == nil:
		return ""
	case cost && sp.MaxCost > 0:
		return sp.MaxCost.String()
	case !cost && sp.MaxTokens > 0:
		return strconv.FormatInt(sp.MaxTokens, 10)
	}
	return ""
}

// attemptView is one attempt of a task, formatted for display.
type attemptView struct {
	Restart   int
	Attempt   int
	Aborted   bool
	Workspace string
	Evidence  []evidenceView
	Decisions []decisionView
	// Spend sums what the attempt reported spending; nil when nothing.
	Spend *cks.UsageSum
	// Empty: nothing recorded.
	Empty bool
}

type decisionView struct {
	ID          int64
	Kind        string
	Text        string
	DerivedFrom int
	Revision    int
	// Stale: derived from an older revision of the task than its current one.
	Stale bool
	Actor string
	At    string
	Shown string
}

type abortView struct {
	ID          int64
	Executor    string
	Attempt     int
	Restart     int
	RequestedBy string
	Reason      string
	Requested   timeField
	Deadline    timeField
	Resolved    timeField // zero At while pending
	Outcome     string
	// Class is "confirmed", "unconfirmed" or "pending".
	Class string
	// Late: confirmed only after the deadline had passed.
	Late bool
}

type timeField struct {
	Label string
	At    string // RFC 3339
	Ago   string
	Shown string // "2026-11-30 12:00:00 UTC"
}

type evidenceView struct {
	ID       int64
	Attempt  int
	Restart  int
	Revision int
	Kind     string
	Body     string
	Actor    string
	At       string
	Shown    string
}

type eventView struct {
	At      string
	Shown   string
	Actor   string
	From    string // "" for the creation event
	To      string
	ToClass string
	Attempt int
	Reason  string
}

func (s *server) taskPage(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		s.errorPage(w, r, http.StatusNotFound, "Task not found",
			fmt.Sprintf("There is no task %q: task ids are positive integers.", raw))
		return
	}
	t, err := ops.GetTask.Do(r.Context(), s.ops, &cks.TaskInput{TaskID: id})
	switch {
	case s.forbidden(w, r, err):
		return
	case errors.Is(err, cks.ErrNotFound):
		s.errorPage(w, r, http.StatusNotFound, "Task not found", fmt.Sprintf("There is no task %d.", id))
		return
	case err != nil:
		s.logErr(r, "studio: get task", err, "task_id", id)
		s.errorPage(w, r, http.StatusInternalServerError, "Could not load the task",
			fmt.Sprintf("Task %d could not be read from the store. The error was logged on the server; reload to try again.", id))
		return
	}
	now := s.clock.Now()
	d := taskDetail{
		taskRow:     s.row(t, now),
		Description: t.Description,
		Criteria:    t.AcceptanceCriteria,
		Revision:    t.Revision,
		DependsOn:   t.DependsOn,
		DedupeKey:   t.DedupeKey,
		CreatedBy:   t.CreatedBy,
		Payload:     prettyJSON(t.Payload),
		Answer:      t.Answer,
		Result:      t.Result,
		LastError:   t.LastError,
		ReviewNote:  t.ReviewNote,
	}
	if t.ParentID != nil {
		d.ParentID = *t.ParentID
	}
	for _, f := range []struct {
		label string
		at    time.Time
	}{
		{"Created", t.CreatedAt},
		{"Updated", t.UpdatedAt},
		{"State changed", t.StateChangedAt},
		{claimedLabel(t), t.ClaimedAt},
		{"Lease renewed", t.LeaseRenewedAt},
		{"Lease expires", t.LeaseExpiresAt},
		{"Run after", t.RunAfter},
	} {
		if f.at.IsZero() {
			continue
		}
		tf := at(now, f.at)
		tf.Label = f.label
		d.Times = append(d.Times, tf)
	}
	if t.Current != nil {
		d.Current = attempt(*t.Current, t.Revision)
	} else {
		d.Current = attemptView{Restart: t.Restarts, Attempt: t.Attempts, Empty: true}
	}
	for i := len(t.History) - 1; i >= 0; i-- {
		d.History = append(d.History, attempt(t.History[i], t.Revision))
	}
	for i := len(t.Aborts) - 1; i >= 0; i-- {
		a := t.Aborts[i]
		v := abortView{ID: a.ID, Executor: a.Executor, Attempt: a.Attempt, Restart: a.Restart, RequestedBy: a.RequestedBy,
			Reason: a.Reason, Requested: at(now, a.RequestedAt), Deadline: at(now, a.DeadlineAt), Resolved: at(now, a.ResolvedAt),
			Outcome: string(a.Outcome), Class: strings.TrimPrefix(string(a.Outcome), "abort_")}
		v.Late = a.Outcome == cks.AbortConfirmed && !a.ResolvedAt.IsZero() && a.ResolvedAt.After(a.DeadlineAt)
		d.Aborts = append(d.Aborts, v)
	}
	d.CanStop = slices.Contains(t.Actions, cks.ActionStop)
	d.CanStart = slices.Contains(t.Actions, cks.ActionStart)
	d.CanCancel = slices.Contains(t.Actions, cks.ActionCancel)
	d.CanRetry = slices.Contains(t.Actions, cks.ActionRetry)
	d.CanAnswer = slices.Contains(t.Actions, cks.ActionAnswer)
	d.CanReview = slices.Contains(t.Actions, cks.ActionReview)
	d.CanUpdate = slices.Contains(t.Actions, cks.ActionUpdate)
	d.CanUpdateMaterial = slices.Contains(t.Actions, cks.ActionUpdateMaterial)
	d.Leased = t.State == cks.TaskClaimed || t.State == cks.TaskRunning
	d.Edit = editFields(t)
	d.Refused = map[string]string{}
	ctx := r.Context()
	for verb, op := range map[string]struct {
		op ops.Operation
		in any
	}{
		"stop":   {ops.StopTask, &cks.StopTaskInput{TaskID: t.ID}},
		"start":  {ops.StartTask, &cks.TaskReasonInput{TaskID: t.ID}},
		"cancel": {ops.CancelTask, &cks.TaskReasonInput{TaskID: t.ID}},
		"retry":  {ops.RetryTask, &cks.TaskReasonInput{TaskID: t.ID}},
		"answer": {ops.AnswerTask, &cks.AnswerTaskInput{TaskID: t.ID}},
		"review": {ops.ClaimReview, &cks.ClaimReviewInput{TaskID: t.ID}},
		"update": {ops.UpdateTask, &cks.UpdateTaskInput{TaskID: t.ID}},
		"create": {ops.CreateTask, &cks.NewTask{}},
	} {
		if err := ops.Authorize(ctx, s.ops, op.op, op.in); err != nil {
			d.Refused[verb] = err.Error()
		}
	}
	for _, e := range t.Events {
		d.Events = append(d.Events, eventView{At: stamp(e.At), Shown: shown(e.At), Actor: e.Actor, From: string(e.From),
			To: string(e.To), ToClass: stateClass(e.To), Attempt: e.Attempt, Reason: e.Reason})
	}
	d.Revisions = revisions(t.Events)
	if d.Spend = budgetOf(t.Spend); d.Spend != nil && d.Spend.Over != "" && t.State == cks.TaskNeedsInput {
		d.BudgetStop = t.Question
	}
	for i := len(d.Events) - 1; i >= 0; i-- {
		if e := d.Events[i]; e.To == string(t.State) {
			d.Moved = &d.Events[i]
			break
		}
	}
	if d.Abort != nil && d.Abort.Class == "unconfirmed" {
		if kind, id, ok := agents.ParseExecutorName(d.Abort.Executor); ok {
			d.Executor = &executorProcess{Kind: kind, InstanceID: id, ShortID: shortID(id)}
			if err := ops.Authorize(ctx, s.ops, ops.RequestProcessStop, &cks.ProcessInput{ProcessKind: kind}); err != nil {
				d.Executor.Refused = err.Error()
			}
		}
	}
	if r.URL.Path != TasksPath+"/"+raw { // the live fragment
		w.Header().Set("X-Studio-Fragment", "task")
		s.render(w, r, http.StatusOK, pages["task"], "task", d)
		return
	}
	p := s.page(fmt.Sprintf("Task %d", t.ID), "tasks", true, d)
	s.render(w, r, http.StatusOK, pages["task"], "layout", p)
}

// claimedLabel names the claim time of t: a task no executor holds now
// (STOPPED, OPEN again, finished) shows when it was last claimed, not a
// "Claimed" time beside "Claimed by nobody".
func claimedLabel(t cks.Task) string {
	if t.ClaimedBy == "" {
		return "Last claimed"
	}
	return "Claimed"
}

// at formats a time for the task page; the zero time gives a zero field.
func at(now, t time.Time) timeField {
	if t.IsZero() {
		return timeField{}
	}
	ago := humanAge(now.Sub(t).Seconds())
	if t.After(now.Add(time.Second)) {
		ago = "in " + strings.TrimSuffix(humanAge(t.Sub(now).Seconds()), " ago")
	}
	return timeField{At: stamp(t), Ago: ago, Shown: shown(t)}
}

// attempt formats one attempt of a task whose revision is now revision.
func attempt(a cks.AttemptView, revision int) attemptView {
	v := attemptView{Restart: a.Restart, Attempt: a.Attempt, Aborted: a.Aborted, Workspace: a.Workspace, Spend: a.Spend,
		Empty: len(a.Evidence) == 0 && len(a.Decisions) == 0 && a.Workspace == "" && a.Spend == nil}
	for _, e := range a.Evidence {
		v.Evidence = append(v.Evidence, evidenceView{ID: e.ID, Attempt: e.Attempt, Restart: e.Restart, Revision: e.Revision,
			Kind: e.Kind, Body: e.Body, Actor: e.Actor, At: stamp(e.CreatedAt), Shown: shown(e.CreatedAt)})
	}
	for _, d := range a.Decisions {
		v.Decisions = append(v.Decisions, decisionView{ID: d.ID, Kind: d.Kind, Text: d.Text, DerivedFrom: d.DerivedFromRevision,
			Revision: d.Revision, Stale: d.DerivedFromRevision < revision, Actor: d.Actor, At: stamp(d.CreatedAt), Shown: shown(d.CreatedAt)})
	}
	return v
}

// shown is a timestamp as the pages print it.
func shown(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// maxIndented is the largest payload the task page indents. Indentation
// grows a value by a level of spaces per line, up to cks.MaxJSONDepth
// levels; past this size the page shows the payload compact, so a page is
// never far larger than what it shows.
const maxIndented = 16 << 10

// prettyJSON indents a JSON payload of at most maxIndented bytes and
// compacts a larger one; anything that is not valid JSON is shown as stored.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var buf bytes.Buffer
	var err error
	if len(raw) <= maxIndented {
		err = json.Indent(&buf, raw, "", "  ")
	} else {
		err = json.Compact(&buf, raw)
	}
	if err != nil {
		return string(raw)
	}
	return buf.String()
}
