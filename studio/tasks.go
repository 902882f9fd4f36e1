package studio

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/store"
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

// StaleStopAge is how long a task may stay STOPPED before the board flags it
// (the stale_stop_report sweeper's default threshold).
const StaleStopAge = 24 * time.Hour

// liveStates are the states of the board's "other live work" list: every
// non-terminal state except STOPPED and NEEDS_INPUT, which have their own.
var liveStates = func() []store.TaskState {
	var out []store.TaskState
	for _, st := range ledger.All {
		if !ledger.IsTerminal(st) && st != ledger.Stopped && st != ledger.NeedsInput {
			out = append(out, st)
		}
	}
	return out
}()

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
	// StaleStop marks a task STOPPED for longer than StaleStopAge.
	StaleStop bool
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
	Next int64
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
	// Filter is the state of a filtered board; "" shows the default sections.
	Filter string
	// After is the cursor the filtered list started after (0: from the start).
	After int64
	// The default board's sections.
	Stopped      taskList
	StaleStopped int // STOPPED for longer than StaleStopAge
	Inbox        taskList
	Live         taskList
	Finished     []chip
	FinishedAll  int
	// Filtered is the list of a filtered board.
	Filtered taskList
}

// badRequest is a query the board refuses; its message is shown as is.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func (s *server) taskBoard(w http.ResponseWriter, r *http.Request) {
	v, err := s.board(r)
	var bad *badRequest
	switch {
	case errors.As(err, &bad):
		s.errorPage(w, r, http.StatusBadRequest, "Bad task filter", bad.msg)
	case err != nil:
		s.logErr(r, "studio: task board", err)
		s.errorPage(w, r, http.StatusInternalServerError, "Could not load tasks",
			"The task list could not be read from the store. The error was logged on the server; reload to try again.")
	default:
		s.render(w, r, http.StatusOK, pages["tasks"], "layout", s.page("Tasks", "tasks", false, v))
	}
}

func (s *server) board(r *http.Request) (boardView, error) {
	q := r.URL.Query()
	v := boardView{Cap: BoardCap, Filter: q.Get("state")}
	if v.Filter != "" && !ledger.Valid(store.TaskState(v.Filter)) {
		names := make([]string, len(ledger.All))
		for i, st := range ledger.All {
			names[i] = string(st)
		}
		return v, &badRequest{fmt.Sprintf("There is no task state %q. The states are %s.", v.Filter, strings.Join(names, ", "))}
	}
	if a := q.Get("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 0 {
			return v, &badRequest{fmt.Sprintf("after=%q is not a task id: expected a non-negative integer.", a)}
		}
		v.After = n
	}

	ctx := r.Context()
	counts := map[store.TaskState]int{}
	for _, st := range ledger.All {
		n, err := s.tasks.CountTasks(ctx, store.TaskFilter{States: []store.TaskState{st}})
		if err != nil {
			return v, fmt.Errorf("count %s tasks: %w", st, err)
		}
		counts[st] = n
		v.Total += n
	}
	// The chips: STOPPED and NEEDS_INPUT first, then lifecycle order.
	order := append([]store.TaskState{ledger.Stopped, ledger.NeedsInput}, liveStates...)
	order = append(order, ledger.Terminal[:]...)
	for _, st := range order {
		c := chip{State: string(st), Class: stateClass(st), Count: counts[st], Active: string(st) == v.Filter}
		v.Chips = append(v.Chips, c)
		if ledger.IsTerminal(st) {
			v.Finished = append(v.Finished, c)
			v.FinishedAll += c.Count
		}
	}

	now := s.clock.Now()
	list := func(states []store.TaskState, after int64) (taskList, error) {
		var l taskList
		for _, st := range states {
			l.Count += counts[st]
		}
		if l.Count == 0 {
			return l, nil
		}
		page, err := s.tasks.ListTasks(ctx, store.TaskFilter{States: states, After: after, Limit: BoardCap})
		if err != nil {
			return l, fmt.Errorf("list %v tasks: %w", states, err)
		}
		for _, t := range page.Tasks {
			l.Rows = append(l.Rows, row(t, now))
		}
		l.Next = page.Next
		return l, nil
	}

	if v.Filter != "" {
		st := store.TaskState(v.Filter)
		l, err := list([]store.TaskState{st}, v.After)
		if err != nil {
			return v, err
		}
		if l.Next != 0 {
			l.MoreURL = boardURL(st, l.Next)
		}
		v.Filtered = l
		return v, nil
	}

	var err error
	if v.Stopped, err = list([]store.TaskState{ledger.Stopped}, 0); err != nil {
		return v, err
	}
	if v.Stopped.Count > 0 {
		v.StaleStopped, err = s.tasks.CountTasks(ctx, store.TaskFilter{States: []store.TaskState{ledger.Stopped},
			StateChangedBefore: now.Add(-StaleStopAge)})
		if err != nil {
			return v, fmt.Errorf("count long-stopped tasks: %w", err)
		}
	}
	if v.Inbox, err = list([]store.TaskState{ledger.NeedsInput}, 0); err != nil {
		return v, err
	}
	if v.Live, err = list(liveStates, 0); err != nil {
		return v, err
	}
	// A default section that is cut short links to its state's own list (the
	// live-work list spans several states, so it links to the next page of
	// its first state that has more).
	if v.Stopped.Next != 0 {
		v.Stopped.MoreURL = boardURL(ledger.Stopped, 0)
	}
	if v.Inbox.Next != 0 {
		v.Inbox.MoreURL = boardURL(ledger.NeedsInput, 0)
	}
	return v, nil
}

// boardURL is the board filtered to st, from after on.
func boardURL(st store.TaskState, after int64) string {
	q := url.Values{"state": {string(st)}}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	return TasksPath + "?" + q.Encode()
}

func stateClass(st store.TaskState) string { return strings.ToLower(string(st)) }

func row(t store.Task, now time.Time) taskRow {
	return taskRow{
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
		StaleStop:   t.State == ledger.Stopped && !t.StateChangedAt.IsZero() && now.Sub(t.StateChangedAt) >= StaleStopAge,
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
	// Current is the current attempt's evidence; Older the earlier attempts',
	// newest attempt first.
	Current []evidenceView
	Older   []attemptEvidence
	Events  []eventView
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
	Revision int
	Kind     string
	Body     string
	Actor    string
	At       string
	Shown    string
}

type attemptEvidence struct {
	Attempt int
	Items   []evidenceView
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
	t, err := s.tasks.GetTask(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
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
		taskRow:     row(t, now),
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
		{"Claimed", t.ClaimedAt},
		{"Lease renewed", t.LeaseRenewedAt},
		{"Lease expires", t.LeaseExpiresAt},
		{"Run after", t.RunAfter},
	} {
		if f.at.IsZero() {
			continue
		}
		ago := humanAge(now.Sub(f.at).Seconds())
		if f.at.After(now.Add(time.Second)) {
			ago = "in " + strings.TrimSuffix(humanAge(f.at.Sub(now).Seconds()), " ago")
		}
		d.Times = append(d.Times, timeField{Label: f.label, At: stamp(f.at), Ago: ago, Shown: shown(f.at)})
	}
	older := map[int][]evidenceView{}
	for _, e := range t.Evidence {
		ev := evidenceView{ID: e.ID, Attempt: e.Attempt, Revision: e.Revision, Kind: e.Kind, Body: e.Body,
			Actor: e.Actor, At: stamp(e.CreatedAt), Shown: shown(e.CreatedAt)}
		if e.Attempt == t.Attempts {
			d.Current = append(d.Current, ev)
		} else {
			older[e.Attempt] = append(older[e.Attempt], ev)
		}
	}
	for a, items := range older {
		d.Older = append(d.Older, attemptEvidence{Attempt: a, Items: items})
	}
	slices.SortFunc(d.Older, func(a, b attemptEvidence) int { return cmp.Compare(b.Attempt, a.Attempt) })
	for _, e := range t.Events {
		d.Events = append(d.Events, eventView{At: stamp(e.At), Shown: shown(e.At), Actor: e.Actor, From: string(e.From),
			To: string(e.To), ToClass: stateClass(e.To), Attempt: e.Attempt, Reason: e.Reason})
	}
	s.render(w, r, http.StatusOK, pages["task"], "layout", s.page(fmt.Sprintf("Task %d", t.ID), "tasks", false, d))
}

// shown is a timestamp as the pages print it.
func shown(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// prettyJSON indents a JSON payload; anything that is not valid JSON is
// shown as stored.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}
