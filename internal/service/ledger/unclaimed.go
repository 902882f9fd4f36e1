package ledger

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
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
//
// The ledger's part is read at most once per TypesTTL, shared by every
// caller meanwhile (readCache): the studio's board asks at each of its
// live updates, in every open tab.
func (s *Service) UnclaimedTypes(ctx context.Context, after time.Duration, declared map[string]bool) (cks.UnclaimedTypes, error) {
	now := s.clock.Now()
	r, err := s.types.get(ctx, struct{}{}, now)
	out := cks.UnclaimedTypes{Types: []cks.UnclaimedType{}, AfterS: after.Seconds()}
	if err != nil {
		return out, err
	}
	for _, d := range r.due {
		if now.Sub(d.Since) > after && !declared[d.Type] && !r.held[d.Type] {
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

// TypesTTL is how long one read of the types due and held answers every
// caller of UnclaimedTypes: the signal is about types that waited a
// minute, so seconds of delay change nothing, and the read groups every
// OPEN task by type.
const TypesTTL = 2 * time.Second

// typesRead is UnclaimedTypes' read of the ledger: the due OPEN tasks'
// types with their longest wait, and the types of the CLAIMED and RUNNING
// tasks.
type typesRead struct {
	due  []driver.TaskTypeDue
	held map[string]bool
}

// readTypes is UnclaimedTypes' read of the store, behind its cache: one
// read transaction, so the two agree.
func (s *Service) readTypes(ctx context.Context, _ struct{}) (typesRead, error) {
	now := s.clock.Now()
	r := typesRead{held: map[string]bool{}}
	err := s.db.WithTx(ctx, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, ex driver.Executor) error {
		var err error
		if r.due, err = ex.TaskTypesDue(ctx, now); err != nil {
			return err
		}
		types, err := ex.TaskTypesHeld(ctx)
		for _, t := range types {
			r.held[t] = true
		}
		return err
	})
	return r, err
}
