package ledger

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/driver"
)

// UnclaimedTypes returns the task types no worker claims (issue 39: a task
// whose type nobody claims used to wait OPEN forever, silently, and a type
// with a stray space looks like the right one): a type is unclaimed when
// its longest-waiting due OPEN task became OPEN more than after ago, no
// task of it is CLAIMED or RUNNING, and declared (the types the live
// processes say they claim, liveness.DeclaredTypes) does not hold it. A
// worker that claims over HTTP without reporting liveness is seen by the
// tasks it holds; one that is idle with nothing held takes the due tasks
// before they wait that long.
func (s *Service) UnclaimedTypes(ctx context.Context, after time.Duration, declared map[string]bool) (cks.UnclaimedTypes, error) {
	now := s.clock.Now()
	var (
		due  []driver.TaskTypeDue
		held = map[string]bool{} // the types of the CLAIMED and RUNNING tasks
	)
	err := s.db.WithTx(ctx, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, ex driver.Executor) error {
		var err error
		if due, err = ex.TaskTypesDue(ctx, now); err != nil {
			return err
		}
		types, err := ex.TaskTypesHeld(ctx)
		for _, t := range types {
			held[t] = true
		}
		return err
	})
	out := cks.UnclaimedTypes{Types: []cks.UnclaimedType{}, AfterS: after.Seconds()}
	if err != nil {
		return out, err
	}
	for _, d := range due {
		if now.Sub(d.Since) > after && !declared[d.Type] && !held[d.Type] {
			out.Types = append(out.Types, cks.UnclaimedType{Type: d.Type, Waiting: d.Due, Since: d.Since})
		}
	}
	slices.SortFunc(out.Types, func(a, b cks.UnclaimedType) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Type, b.Type))
	})
	out.Total = len(out.Types)
	if len(out.Types) > cks.MaxUnclaimedTypes {
		out.Types = out.Types[:cks.MaxUnclaimedTypes]
	}
	return out, nil
}
