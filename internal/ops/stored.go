package ops

import (
	"context"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
)

// storedPage is how many rows one check_stored call reads: a listing's
// default page, so a call costs what a listing does.
const storedPage = cks.DefaultListLimit

// CheckStored is check_stored: one page of tasks or objects, each checked
// by the leaf's rules as a write would be today (cks.CheckStoredTask,
// cks.CheckStoredObject). `cks doctor` walks every page.
var CheckStored = define(cks.OpCheckStored, &Op[cks.CheckStoredInput, cks.StoredCheck]{
	spec: Spec{
		Title:   "Check stored values",
		Summary: "report stored tasks or objects past today's bounds, one page at a time",
		Description: "Check one page of tasks or knowledge objects (what: tasks or objects; cursor: the previous page's " +
			"next_cursor) against the rules a write meets today — the nesting, size and number bounds of every JSON " +
			"value and the length of every text field — and list what is past them: values stored before a bound " +
			"existed, which are still served. Needs admin on /.",
		Permission: auth.PermAdmin, Resource: auth.ResourceRoot, Surfaces: HTTP | CLI, Needs: NeedTasks | NeedObjects,
		Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, in *cks.CheckStoredInput) (cks.StoredCheck, error) {
		if in.What == "tasks" {
			page, err := s.Tasks.ListTasks(ctx, cks.TaskFilter{After: in.Cursor, Limit: storedPage})
			return storedCheck(page.Tasks, cks.CheckStoredTask, page.Next), err
		}
		page, err := s.Objects.ListObjects(ctx, cks.ObjectFilter{After: in.Cursor, Limit: storedPage})
		return storedCheck(page.Objects, cks.CheckStoredObject, page.Next), err
	},
})

// storedCheck is the answer for one page of rows, each checked by check.
func storedCheck[T any](rows []T, check func(T) []cks.StoredProblem, next int64) cks.StoredCheck {
	out := cks.StoredCheck{Problems: []cks.StoredProblem{}, Checked: len(rows), Next: next}
	for _, r := range rows {
		out.Problems = append(out.Problems, check(r)...)
	}
	return out
}
