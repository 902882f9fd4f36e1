package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/cks-dev/cks"
)

// TaskLister reads a page of tasks: Service has it, and so has the Go
// client of the HTTP API, so a listing rule runs the same over either.
type TaskLister interface {
	ListTasks(ctx context.Context, f cks.TaskFilter) (cks.TaskPage, error)
}

// StoppedFirstQuery is what ListStoppedFirst lists.
type StoppedFirstQuery struct {
	// Types and Match limit every list to these task types, and the
	// filter's Text, CreatedBy and UnconfirmedAbort; Sort and AfterKey
	// order and page the tasks after the STOPPED ones.
	Types    []string
	Match    cks.TaskFilter
	Sort     cks.TaskSort
	AfterKey string
	// After and Limit page the tasks after the STOPPED ones.
	After int64
	Limit int
	// Rest are the states listed after the STOPPED tasks: nil for every
	// state but STOPPED, empty for none.
	Rest []cks.TaskState
	// MaxStopped, when set, lists the STOPPED tasks of one page of at most
	// that many (and at most cks.MaxPageBytes), MoreStopped saying whether
	// there are more; 0 lists every one, page after page.
	MaxStopped int
}

// StoppedFirst is a listing with the STOPPED tasks first: the operator
// holds, which nothing runs until someone starts them.
type StoppedFirst struct {
	// Stopped is how many of Tasks, at its head, are STOPPED.
	Stopped int        `json:"stopped"`
	Tasks   []cks.Task `json:"tasks"`
	// Next is the cursor of the following page of the rest, 0 on the last.
	Next    int64  `json:"next_cursor,omitempty"`
	NextKey string `json:"next_key,omitempty"`
	// MoreStopped is set when there are more STOPPED tasks than MaxStopped.
	MoreStopped bool `json:"more_stopped,omitempty"`
}

// ListStoppedFirst is the one rule of how operator views list tasks (ADR
// 0020: STOPPED tasks first and prominently; the CLI's `task list` and the
// studio's board): every STOPPED task (up to q.MaxStopped) heads the first
// page (q.After 0) — longest held first, a forgotten hold being the one to
// see — followed by one page of the tasks in q.Rest.
func ListStoppedFirst(ctx context.Context, l TaskLister, q StoppedFirstQuery) (StoppedFirst, error) {
	out := StoppedFirst{Tasks: []cks.Task{}}
	if q.After == 0 {
		f := cks.TaskFilter{States: []cks.TaskState{cks.TaskStopped}, Types: q.Types, Limit: cks.MaxListLimit,
			Text: q.Match.Text, CreatedBy: q.Match.CreatedBy, UnconfirmedAbort: q.Match.UnconfirmedAbort}
		if q.MaxStopped > 0 {
			f.Limit = min(cks.MaxListLimit, q.MaxStopped)
		}
		for {
			page, err := l.ListTasks(ctx, f)
			if err != nil {
				return out, err
			}
			out.Tasks = append(out.Tasks, page.Tasks...)
			if page.Next == 0 {
				break
			}
			if q.MaxStopped > 0 {
				out.MoreStopped = true
				break
			}
			f.After = page.Next
		}
		slices.SortStableFunc(out.Tasks, func(a, b cks.Task) int {
			return cmp.Or(a.StateChangedAt.Compare(b.StateChangedAt), cmp.Compare(a.ID, b.ID))
		})
		out.Stopped = len(out.Tasks)
	}
	rest := q.Rest
	if rest == nil {
		for _, st := range All {
			if st != cks.TaskStopped {
				rest = append(rest, st)
			}
		}
	}
	if len(rest) == 0 {
		return out, nil
	}
	page, err := l.ListTasks(ctx, cks.TaskFilter{States: rest, Types: q.Types, After: q.After, Limit: q.Limit,
		Text: q.Match.Text, CreatedBy: q.Match.CreatedBy, UnconfirmedAbort: q.Match.UnconfirmedAbort, Sort: q.Sort, AfterKey: q.AfterKey})
	if err != nil {
		return out, err
	}
	out.Tasks = append(out.Tasks, page.Tasks...)
	out.Next, out.NextKey = page.Next, page.NextKey
	return out, nil
}

// CheckOrder reports a FieldError naming order unless ListInOrder lists f
// in order: an order that is id, empty or stopped_first, and with
// stopped_first no state filter (f.States, f.StateChangedBefore) and no
// parent (its head lists every task's holds).
func CheckOrder(f cks.TaskFilter, order cks.TaskOrder) error {
	switch order {
	case "", cks.TaskOrderByID:
		return nil
	case cks.TaskOrderStoppedFirst:
	default:
		return &cks.FieldError{Field: "order",
			Expected: fmt.Sprintf("%s or %s, got %q", cks.TaskOrderByID, cks.TaskOrderStoppedFirst, order)}
	}
	if len(f.States) > 0 || !f.StateChangedBefore.IsZero() || f.Parent != 0 {
		return &cks.FieldError{Field: "order",
			Expected: "no state filter, stopped_longer_than or parent_id with stopped_first (it lists every state, the STOPPED tasks first)"}
	}
	return nil
}

// ListInOrder lists the page of f in order, the rule of list_tasks on every
// surface: by task_id (cks.TaskOrderByID, also the empty order), or
// cks.TaskOrderStoppedFirst — ListStoppedFirst over f's types and page,
// one page of STOPPED tasks (up to cks.MaxListLimit) heading the first
// page (Stopped says how many, MoreStopped that there are more), so the
// answer is at most two pages. The STOPPED
// head lists every state's holds, so stopped_first takes no state filter
// (f.States, f.StateChangedBefore); an order that is neither is refused,
// naming the input's field order.
func ListInOrder(ctx context.Context, l TaskLister, f cks.TaskFilter, order cks.TaskOrder) (cks.TaskPage, error) {
	if err := CheckOrder(f, order); err != nil {
		return cks.TaskPage{}, err
	}
	if order != cks.TaskOrderStoppedFirst {
		return l.ListTasks(ctx, f)
	}
	sf, err := ListStoppedFirst(ctx, l, StoppedFirstQuery{Types: f.Types, Match: f, Sort: f.Sort, After: f.After, AfterKey: f.AfterKey,
		Limit: f.Limit, MaxStopped: cks.MaxListLimit})
	if err != nil {
		return cks.TaskPage{}, err
	}
	return cks.TaskPage{Tasks: sf.Tasks, Next: sf.Next, NextKey: sf.NextKey, Stopped: &sf.Stopped, MoreStopped: sf.MoreStopped}, nil
}
